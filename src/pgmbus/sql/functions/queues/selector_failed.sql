-- Function: mbus.selector_failed(qname, cname, dst, msg, state, error, priority)
--
-- Purpose:  What a post does when a selector raises an error on its message (a cast that fails,
--           a division by zero): the copy that selector decided about goes to mbus.dmq with a
--           reason naming the consumer (or the trigger) and the error, and the consumer's (the
--           trigger's) selector_errors counter goes up; the post and the other consumers' copies
--           go on. A consumer's copy is dead in qname for cname; a trigger's copy is dead in dst
--           (cname NULL: a replay posts it to dst).
-- Params:   qname  the queue posted to (text)
--           cname  the consumer whose selector raised (text; NULL for a trigger)
--           dst    the trigger's destination queue (text; NULL for a consumer)
--           msg    the message as the post built it (mbus.qt_model)
--           state  the error's SQLSTATE (text)
--           error  the error's message (text)
--           priority  the message's priority, kept in the dmq row for a replay (integer)
-- Returns:  void
-- Locks:    INSERT into mbus.dmq; a row lock of the consumer's mbus.consumer row (or the
--           trigger's mbus.queue_trigger row) for the counter, to the end of the transaction
-- Calls:    none
-- Tables:   mbus.consumer, mbus.dmq, mbus.queue_trigger
CREATE OR REPLACE FUNCTION mbus.selector_failed(qname text, cname text, dst text, msg mbus.qt_model,
                                                state text, error text,
                                                priority integer DEFAULT 0)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                          properties, data, consume_after, attempts, reason, priority)
    VALUES (coalesce(dst, qname), cname, CASE WHEN dst IS NULL THEN msg.id END, msg.iid, msg.added,
            msg.delayed_until, msg.expires, msg.headers, msg.properties, msg.data,
            msg.consume_after, 0,
            CASE WHEN dst IS NULL
                 THEN format('selector of consumer %s of queue %s failed: %s (SQLSTATE %s)',
                             cname, qname, error, state)
                 ELSE format('selector of trigger %s -> %s failed: %s (SQLSTATE %s)',
                             qname, dst, error, state) END,
            coalesce(priority, 0));
    IF dst IS NULL THEN
        UPDATE mbus.consumer AS c SET selector_errors = c.selector_errors + 1
        WHERE c.qname = selector_failed.qname AND c.cname = selector_failed.cname;
    ELSE
        UPDATE mbus.queue_trigger AS tr SET selector_errors = tr.selector_errors + 1
        WHERE tr.src = selector_failed.qname AND tr.dst = selector_failed.dst;
    END IF;
END;
$$;
