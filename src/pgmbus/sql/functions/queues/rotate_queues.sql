-- Function: mbus.rotate_queues()
--
-- Purpose:  mbus.rotate_queue for every queue (in name order), in one call: for users who consume
--           from SQL and schedule the upkeep themselves. Call it in autocommit. All queues share
--           the one transaction: the transaction-local setting mbus.rotating_all tells rotate_queue
--           that the writes of the queues before are its own (so every queue is rotated, not only
--           those up to the first that wrote), and each queue gets one lock attempt per busy
--           segment (p_tries = 1), so no call sleeps while it holds a truncated segment's lock.
-- Params:   none
-- Returns:  jsonb: {queue: rotate_queue's report} for every queue
-- Locks:    those of mbus.rotate_queue for each queue, all held to the end of the one transaction
--           (truncated segments stay ACCESS EXCLUSIVE locked until it ends, a few milliseconds
--           per queue; callers that mind use rotate_queue per queue)
-- Calls:    mbus.rotate_queue
-- Tables:   mbus.queue_segment
CREATE OR REPLACE FUNCTION mbus.rotate_queues()
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q      text;
    v_report jsonb := '{}';
BEGIN
    PERFORM set_config('mbus.rotating_all', 'on', true);
    FOR v_q IN SELECT s.qname FROM mbus.queue_segment AS s ORDER BY s.qname LOOP
        v_report := v_report || jsonb_build_object(v_q, mbus.rotate_queue(v_q, 1));
    END LOOP;
    PERFORM set_config('mbus.rotating_all', 'off', true);
    RETURN v_report;
END;
$$;
