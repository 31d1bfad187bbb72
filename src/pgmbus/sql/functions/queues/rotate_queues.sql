-- Function: mbus.rotate_queues()
--
-- Purpose:  mbus.rotate_queue for every queue (in name order), in one call: for users who consume
--           from SQL and schedule the upkeep themselves. Call it in autocommit. All queues share
--           the one transaction, so once a queue's rotation wrote (a TRUNCATE or its queue_segment
--           update), rotate_queue skips the queues after it as 'not a transaction of its own' until
--           the next call.
-- Params:   none
-- Returns:  jsonb: {queue: rotate_queue's report} for every queue
-- Locks:    those of mbus.rotate_queue for each queue, all held to the end of the one transaction
--           (truncated segments stay ACCESS EXCLUSIVE locked until it ends)
-- Callers:  users directly (the Bus docs name it for queues without rotate_every; not a public
--           entry point); no Python or SQL caller
CREATE OR REPLACE FUNCTION mbus.rotate_queues()
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q      text;
    v_report jsonb := '{}';
BEGIN
    FOR v_q IN SELECT s.qname FROM mbus.queue_segment AS s ORDER BY s.qname LOOP
        v_report := v_report || jsonb_build_object(v_q, mbus.rotate_queue(v_q));
    END LOOP;
    RETURN v_report;
END;
$$;
