-- Function: mbus.upkeep_queue(qname, p_tries)
--
-- Purpose:  The queue's storage upkeep (mbus.rotate_queue) when it is due by the queue's own
--           clock: queue_segment.upkept_at is upkeep_every old, the test the claims make before
--           they run it. Clients that keep a queue's storage flat (Bus/AsyncBus consumers, the
--           worker) call this instead of rotate_queue, so any number of processes together run
--           the upkeep about once per upkeep_every, not each one on its own timer. With
--           upkeep_every NULL (the claims never run it) it is always due: the callers are then
--           the only upkeep.
-- Params:   qname    the queue's name (text)
--           p_tries  lock attempts per busy segment, 1 ms apart (integer; default 100)
-- Returns:  jsonb: rotate_queue's report, or {skipped: 'not due'}; MB001/MB002 for a bad or
--           unknown queue
-- Locks:    none when not due (a read of its mbus.queue_segment row); else those of
--           mbus.rotate_queue. SECURITY DEFINER, as rotate_queue, so roles that only consume can
--           run it
-- Calls:    mbus.require_queue, mbus.rotate_queue
-- Tables:   mbus.queue_segment
CREATE OR REPLACE FUNCTION mbus.upkeep_queue(qname text, p_tries integer DEFAULT 100)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    IF EXISTS (SELECT 1 FROM mbus.queue_segment AS s
               WHERE s.qname = upkeep_queue.qname
                 AND s.upkept_at >= clock_timestamp() - s.upkeep_every) THEN
        RETURN jsonb_build_object('skipped', 'not due');
    END IF;
    RETURN mbus.rotate_queue(qname, p_tries);
END;
$$;
