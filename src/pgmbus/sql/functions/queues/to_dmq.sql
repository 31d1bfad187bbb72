-- Function: mbus.to_dmq(msg, qname, reason, cname, priority)
--
-- Purpose:  Put a message as a consume returned it (an mbus.qt_model row) into mbus.dmq, keeping
--           its id, iid, times, payloads, consume_after, attempts and priority; like
--           mbus.post_dmq for a whole row. For a transactional consume, call it in the same
--           transaction so the message is moved, not lost or doubled. qt_model has no priority
--           column: a consume returns a message's priority (> 0) as headers.priority, which the
--           claims set from the row (and remove when the row's priority is 0), so it is the
--           message's own; dmq_replay posts it back with it.
-- Params:   msg       the message (mbus.qt_model)
--           qname     the queue it came from (text)
--           reason    why it is dead (text; default and NULL 'cannot be processed')
--           cname     the consumer it was for (text; NULL = none)
--           priority  the priority to keep (0..32767; NULL = msg.headers.priority, else 0)
-- Returns:  bigint: the dmq_id; MB001 for a bad queue name, MB006 for a priority (given, or an
--           integer headers.priority) out of 0..32767
-- Locks:    none beyond the INSERT into mbus.dmq
-- Calls:    mbus.check_name
-- Tables:   mbus.dmq
CREATE OR REPLACE FUNCTION mbus.to_dmq(msg mbus.qt_model, qname text, reason text DEFAULT 'cannot be processed',
                            cname text DEFAULT NULL, priority integer DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_id   bigint;
    v_prio integer := priority;
BEGIN
    PERFORM mbus.check_name('queue', qname, 24);
    IF v_prio IS NULL AND jsonb_typeof(msg.headers -> 'priority') = 'number'
       AND (msg.headers ->> 'priority') ~ '^[0-9]{1,5}$' THEN
        v_prio := (msg.headers ->> 'priority')::integer;
    END IF;
    IF v_prio < 0 OR v_prio > 32767 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('priority %s is not in 0..32767', v_prio);
    END IF;
    INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers, properties,
                          data, consume_after, attempts, reason, priority)
    VALUES (qname, cname, msg.id, msg.iid, msg.added, msg.delayed_until, msg.expires, msg.headers,
            msg.properties, msg.data, msg.consume_after, coalesce(msg.attempts, 0),
            coalesce(reason, 'cannot be processed'), coalesce(v_prio, 0))
    RETURNING dmq_id INTO v_id;
    RETURN v_id;
END;
$$;
