-- Function: mbus.move_receive(move_id, qname, messages)
--
-- Purpose:  The receiving half of one transfer of a queue move (runs on the new server): post
--           each message of the batch, in order, to queue qname with its own iid, unless the
--           move has posted that iid here before (the mover crashed after this side committed
--           and sent the batch again): then it is counted as 'duplicate'. The iids are
--           recorded in mbus.move_received in the same transaction as the posts. Unlike
--           mbus.exchange_receive, a database already in seenby is not refused: a queue may
--           move back to a server it came from.
-- Params:   move_id   the move (mbus.placement.move_id on the home database, text)
--           qname     a queue of this database (text)
--           messages  a jsonb array as mbus.move_take returns it
-- Returns:  jsonb {"accepted": n, "duplicate": n}; MB001/MB002 for a bad or unknown queue,
--           MB006 for a bad move_id, a non-array or an element without iid, MB005 for a payload
--           post_<qname> refuses
-- Locks:    inserts into mbus.move_received and those of post_<qname>
-- Callers:  pgmbus.scaleout.move via sql/scaleout.sql 'receive'; tests tests/scaleout
CREATE OR REPLACE FUNCTION mbus.move_receive(move_id text, qname text, messages jsonb)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    m          jsonb;
    v_post     text := format('SELECT mbus.%I($1, $2, $3, $4, $5, $6)', mbus.generated_name('function', 'post', qname));
    v_accepted integer := 0;
    v_dup      integer := 0;
    v_iid      text;
BEGIN
    PERFORM mbus.require_queue(qname);
    IF move_id IS NULL OR btrim(move_id) = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'a move needs its move_id';
    END IF;
    IF messages IS NULL OR jsonb_typeof(messages) <> 'array' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'messages must be a jsonb array';
    END IF;
    FOR m IN SELECT e.value FROM jsonb_array_elements(messages) WITH ORDINALITY AS e
             ORDER BY e.ordinality LOOP
        v_iid := m ->> 'iid';
        IF v_iid IS NULL OR v_iid = '' THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'a message to receive has no iid';
        END IF;
        INSERT INTO mbus.move_received AS r (move_id, iid) VALUES (move_receive.move_id, v_iid)
        ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            v_dup := v_dup + 1;
            CONTINUE;
        END IF;
        EXECUTE v_post USING m -> 'data', m -> 'headers',
            CASE WHEN jsonb_typeof(m -> 'properties') = 'object' THEN m -> 'properties' END,
            (m ->> 'delayed_until')::timestamptz, (m ->> 'expires')::timestamptz, v_iid;
        v_accepted := v_accepted + 1;
    END LOOP;
    RETURN jsonb_build_object('accepted', v_accepted, 'duplicate', v_dup);
END;
$$;
