CREATE OR REPLACE FUNCTION mbus.deps_golden(action text, p_iid text, p_id bigint)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_n   bigint;
    v_new bigint;
BEGIN
    CASE action
    WHEN 'await' THEN
        IF p_id IS NOT NULL THEN
            SELECT count(*), count(*) FILTER (WHERE NOT x.waited) INTO v_n, v_new
            FROM (SELECT q.waited FROM mbus.q_golden AS q WHERE q.id = p_id AND q.iid IS NULL FOR SHARE) AS x;
            IF v_new > 0 THEN
                UPDATE mbus.q_golden AS q SET waited = true WHERE q.id = p_id AND q.iid IS NULL AND NOT q.waited;
            END IF;
        ELSE
            SELECT count(*), count(*) FILTER (WHERE NOT x.waited) INTO v_n, v_new
            FROM (SELECT q.waited FROM mbus.q_golden AS q WHERE q.iid = p_iid FOR SHARE) AS x;
            IF v_new > 0 THEN
                UPDATE mbus.q_golden AS q SET waited = true WHERE q.iid = p_iid AND NOT q.waited;
            END IF;
        END IF;
        RETURN v_n;
    WHEN 'release' THEN
        IF p_id IS NOT NULL THEN
            SELECT count(*), count(*) FILTER (WHERE NOT q.waited) INTO v_n, v_new
            FROM mbus.q_golden AS q WHERE q.id = p_id AND q.iid IS NULL;
            IF v_new > 0 THEN
                UPDATE mbus.q_golden AS q SET waited = true WHERE q.id = p_id AND q.iid IS NULL AND NOT q.waited;
                RETURN (EXISTS (SELECT 1 FROM mbus.q_golden AS q WHERE q.id = p_id AND q.iid IS NULL))::integer;
            END IF;
        ELSE
            SELECT count(*), count(*) FILTER (WHERE NOT q.waited) INTO v_n, v_new
            FROM mbus.q_golden AS q WHERE q.iid = p_iid;
            IF v_new > 0 THEN
                UPDATE mbus.q_golden AS q SET waited = true WHERE q.iid = p_iid AND NOT q.waited;
                RETURN (EXISTS (SELECT 1 FROM mbus.q_golden AS q WHERE q.iid = p_iid))::integer;
            END IF;
        END IF;
        RETURN (v_n > 0)::integer;
    WHEN 'free' THEN
        -- post_<q> puts a waiting message (vt infinity) in the parking segment 0; through the
        -- parent only when none of its deliveries is there (taken, or parked elsewhere by an
        -- older version)
        UPDATE mbus."q_golden$0" AS q SET vt = coalesce(q.delayed_until, q.added)
        WHERE q.id = p_id AND q.vt = 'infinity';
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n = 0 THEN
            UPDATE mbus.q_golden AS q SET vt = coalesce(q.delayed_until, q.added)
            WHERE q.id = p_id AND q.vt = 'infinity';
            GET DIAGNOSTICS v_n = ROW_COUNT;
        END IF;
        RETURN v_n;
    ELSE
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('unknown consume_after action %L', action);
    END CASE;
END;
$function$
