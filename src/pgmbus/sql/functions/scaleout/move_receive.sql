-- Function: mbus.move_receive(move_id, qname, messages)
--
-- Purpose:  The receiving half of one transfer of a queue move (runs on the new server): post
--           each message of the batch, in order, to queue qname with its own iid, unless the
--           move posted that iid here before (sent again after a crash): counted as
--           'duplicate'. The iids are recorded in mbus.move_received in the same transaction as
--           the posts. Checks and post (with the priority) are shared with routes
--           (mbus.transfer_messages, mbus.transfer_post). Unlike mbus.exchange_receive, a
--           database already in seenby is not refused: a queue may move back to a server.
-- Params:   move_id   the move (mbus.placement.move_id on the home database, text)
--           qname     a queue of this database (text)
--           messages  a jsonb array as mbus.move_take (mbus.transfer_take) returns it
-- Returns:  jsonb {"accepted": n, "duplicate": n}; MB001/MB002 for a bad or unknown queue,
--           MB006 for a bad move_id, a non-array, an element without iid or a bad priority,
--           MB005 for a payload post_<qname> refuses
-- Locks:    inserts into mbus.move_received and those of post_<qname>
-- Calls:    mbus.transfer_messages, mbus.transfer_post
-- Tables:   mbus.move_received
CREATE OR REPLACE FUNCTION mbus.move_receive(move_id text, qname text, messages jsonb)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    m          record;
    v_accepted integer := 0;
    v_dup      integer := 0;
BEGIN
    IF move_id IS NULL OR btrim(move_id) = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'a move needs its move_id';
    END IF;
    FOR m IN SELECT * FROM mbus.transfer_messages(qname, messages) LOOP
        INSERT INTO mbus.move_received AS r (move_id, iid) VALUES (move_receive.move_id, m.iid)
        ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            v_dup := v_dup + 1;
            CONTINUE;
        END IF;
        PERFORM mbus.transfer_post(qname, m.message);
        v_accepted := v_accepted + 1;
    END LOOP;
    RETURN jsonb_build_object('accepted', v_accepted, 'duplicate', v_dup);
END;
$$;
