-- Function: mbus.resume_queue(qname, cname)
--
-- Purpose:  Undo mbus.pause_queue for a queue (cname NULL) or one consumer; waiting consumers
--           are woken (a notification on mbus_q_<qname> when a session waits). Resuming a
--           consumer of a paused queue leaves the queue paused; resuming the queue leaves a
--           paused consumer paused.
-- Params:   qname  the queue's name (text)
--           cname  the consumer's name (text; NULL = the whole queue)
-- Returns:  boolean: true when it was paused; MB001/MB002 for a bad or unknown queue or consumer
-- Locks:    the row of mbus.queue_pause it deletes; a pg_notify only when a session waits
-- Calls:    mbus.require_consumer, mbus.require_queue
-- Tables:   mbus.queue_pause, mbus.queue_waiter
CREATE OR REPLACE FUNCTION mbus.resume_queue(qname text, cname text DEFAULT NULL)
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
    DELETE FROM mbus.queue_pause AS p
    WHERE p.qname = resume_queue.qname AND p.cname = coalesce(resume_queue.cname, '');
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT 1 FROM mbus.queue_waiter AS w WHERE w.qname = resume_queue.qname) THEN
        PERFORM pg_notify('mbus_q_' || qname, qname);
    END IF;
    RETURN true;
END;
$$;
