-- Function: mbus.to_dmq(msg, qname, reason, cname)
--
-- Purpose:  Put a message as a consume returned it (an mbus.qt_model row) into mbus.dmq, keeping
--           its id, iid, times, payloads, consume_after and attempts; like mbus.post_dmq for a
--           whole row. For a transactional consume, call it in the same transaction so the message
--           is moved, not lost or doubled.
-- Params:   msg     the message (mbus.qt_model)
--           qname   the queue it came from (text)
--           reason  why it is dead (text; default and NULL 'cannot be processed')
--           cname   the consumer it was for (text; NULL = none)
-- Returns:  bigint: the dmq_id; MB001 for a bad queue name
-- Locks:    none beyond the INSERT into mbus.dmq
-- Callers:  users directly; tests tests/queues/test_queues_seed.py only
CREATE OR REPLACE FUNCTION mbus.to_dmq(msg mbus.qt_model, qname text, reason text DEFAULT 'cannot be processed',
                            cname text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_id bigint;
BEGIN
    PERFORM mbus.check_name('queue', qname, 24);
    INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers, properties,
                          data, consume_after, attempts, reason)
    VALUES (qname, cname, msg.id, msg.iid, msg.added, msg.delayed_until, msg.expires, msg.headers,
            msg.properties, msg.data, msg.consume_after, coalesce(msg.attempts, 0),
            coalesce(reason, 'cannot be processed'))
    RETURNING dmq_id INTO v_id;
    RETURN v_id;
END;
$$;
