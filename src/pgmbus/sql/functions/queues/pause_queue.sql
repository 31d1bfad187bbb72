-- Function: mbus.pause_queue(qname, cname)
--
-- Purpose:  Pause a queue (cname NULL: every consumer) or one consumer: its claims (consume_,
--           consumen_, lease_<q>_by_<c>, and the generic consume/consumen/consume_lease/
--           consume_wait that dispatch to them) return no message until mbus.resume_queue. Posts
--           are still accepted and pile up; take/take_from by iid, ack/nack/extend/bury of
--           leases already held, purge and the dmq work as before. A claim that started before
--           the pause committed may still return its message. Pausing what is paused already
--           does nothing (the time of the first pause is kept).
-- Params:   qname  the queue's name (text)
--           cname  the consumer's name (text; NULL = the whole queue)
-- Returns:  boolean: true when it was not paused before; MB001/MB002 for a bad or unknown queue
--           or consumer
-- Locks:    the row of mbus.queue_pause it inserts
-- Calls:    mbus.require_consumer, mbus.require_queue
-- Tables:   mbus.queue_pause
CREATE OR REPLACE FUNCTION mbus.pause_queue(qname text, cname text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    IF cname IS NULL THEN
        PERFORM mbus.require_queue(qname);
    ELSE
        PERFORM mbus.require_consumer(qname, cname);
    END IF;
    INSERT INTO mbus.queue_pause (qname, cname) VALUES (qname, coalesce(cname, ''))
    ON CONFLICT DO NOTHING;
    RETURN FOUND;
END;
$$;
