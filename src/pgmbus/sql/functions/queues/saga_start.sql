-- Function: mbus.saga_start(name, steps, data)
--
-- Purpose:  Start a saga; returns its id. steps is a JSON array in an order where every step
--           comes after the steps it names: [{"step", "queue", "after": [...], "compensate",
--           "data"}, ...]. Every message carries data || {"saga_id", "step"} and headers.saga {id,
--           step, bung, compensation}. All its messages are posted here in one transaction, with
--           consume_after edges that do the scheduling. mbus.saga_pump consumes the final message
--           (completed) and the done message (compensated); mbus.saga_rollback takes the bung
--           and what it lists.
-- Params:   name   the saga's name (text)
--           steps  the steps (jsonb array, non-empty; MB006 for bad or duplicate steps)
--           data   the saga's own data, kept in mbus.saga (jsonb object or NULL)
-- Returns:  bigint: the saga_id
-- Locks:    those of mbus.saga_queue on first use (create_queue's advisory lock); the posts'
--           (mbus.await_deps's row locks); INSERT into mbus.saga and mbus.saga_step
-- Calls:    mbus.check_payload, mbus.get_iid, mbus.saga_post, mbus.saga_queue
-- Tables:   mbus.saga, mbus.saga_step
-- Design:   docs/DESIGN.md#saga_start-a-saga-made-of-dependencies
CREATE OR REPLACE FUNCTION mbus.saga_start(name text, steps jsonb, data jsonb DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_id    bigint;
    v_bung  text;
    v_final text;
    v_done  text;
    s       record;
    v_after text[];
    v_iid   text;
    v_fwd   text[] := '{}';
    v_comp  text[] := '{}';
    v_seen  jsonb := '{}';
BEGIN
    IF name IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'a saga needs a name';
    END IF;
    IF jsonb_typeof(steps) IS DISTINCT FROM 'array' OR jsonb_array_length(steps) = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'steps must be a non-empty JSON array';
    END IF;
    PERFORM mbus.check_payload('data', data);
    PERFORM mbus.saga_queue('mbus_saga_bung');
    PERFORM mbus.saga_queue('mbus_saga_final');
    PERFORM mbus.saga_queue('mbus_saga_done');
    v_bung := mbus.get_iid('mbus_saga_bung');
    v_final := mbus.get_iid('mbus_saga_final');
    v_done := mbus.get_iid('mbus_saga_done');
    INSERT INTO mbus.saga (name, data, bung_iid, final_iid, done_iid)
    VALUES (name, data, v_bung, v_final, v_done) RETURNING saga_id INTO v_id;
    FOR s IN SELECT e.value AS v, e.ord FROM jsonb_array_elements(steps) WITH ORDINALITY AS e(value, ord)
    LOOP
        IF jsonb_typeof(s.v -> 'step') IS DISTINCT FROM 'string'
           OR jsonb_typeof(s.v -> 'queue') IS DISTINCT FROM 'string' THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'every step needs "step" and "queue"';
        END IF;
        IF v_seen ? (s.v ->> 'step') THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('step %s appears twice', s.v ->> 'step');
        END IF;
        SELECT coalesce(array_agg(v_seen ->> a.n), '{}') INTO v_after
        FROM jsonb_array_elements_text(coalesce(s.v -> 'after', '[]')) AS a(n);
        IF array_position(v_after, NULL) IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('step %s comes after a step not listed before it', s.v ->> 'step');
        END IF;
        v_iid := mbus.saga_post(
            s.v ->> 'queue',
            coalesce(s.v -> 'data', '{}') || jsonb_build_object('saga_id', v_id, 'step', s.v ->> 'step'),
            jsonb_build_object('consume_after', to_jsonb(v_after),
                               'saga', jsonb_build_object('id', v_id, 'step', s.v ->> 'step',
                                                          'bung', v_bung, 'compensation', false)));
        v_seen := v_seen || jsonb_build_object(s.v ->> 'step', v_iid);
        v_fwd := v_fwd || v_iid;
        INSERT INTO mbus.saga_step (saga_id, step, ord, qname, iid, after, comp_qname)
        VALUES (v_id, s.v ->> 'step', s.ord, s.v ->> 'queue', v_iid, v_after, s.v ->> 'compensate');
    END LOOP;
    -- The bung: consumable by nobody, taken by a rollback or by the final message.
    PERFORM mbus.saga_post('mbus_saga_bung',
        jsonb_build_object('saga_id', v_id, 'take', to_jsonb(v_fwd || v_final)),
        NULL, 'infinity', v_bung);
    FOR s IN SELECT st.step, st.comp_qname FROM mbus.saga_step AS st
             WHERE st.saga_id = v_id AND st.comp_qname IS NOT NULL ORDER BY st.ord LOOP
        v_iid := mbus.saga_post(
            s.comp_qname,
            coalesce((SELECT e.value -> 'data' FROM jsonb_array_elements(steps) AS e(value)
                      WHERE e.value ->> 'step' = s.step), '{}')
                || jsonb_build_object('saga_id', v_id, 'step', s.step),
            jsonb_build_object('consume_after', jsonb_build_array(v_bung),
                               'saga', jsonb_build_object('id', v_id, 'step', s.step,
                                                          'bung', v_bung, 'compensation', true)));
        UPDATE mbus.saga_step AS st SET comp_iid = v_iid WHERE st.saga_id = v_id AND st.step = s.step;
        v_comp := v_comp || v_iid;
    END LOOP;
    PERFORM mbus.saga_post('mbus_saga_done', jsonb_build_object('saga_id', v_id),
        jsonb_build_object('consume_after',
                           to_jsonb(CASE WHEN cardinality(v_comp) = 0 THEN ARRAY[v_bung] ELSE v_comp END)),
        NULL, v_done);
    PERFORM mbus.saga_post('mbus_saga_final',
        jsonb_build_object('saga_id', v_id, 'take', to_jsonb(v_comp || v_done || v_bung)),
        jsonb_build_object('consume_after', to_jsonb(v_fwd)), NULL, v_final);
    RETURN v_id;
END;
$$;
