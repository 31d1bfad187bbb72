-- Function: mbus.drop_trigger(src_queue_name, dst_queue_name)
--
-- Purpose:  Drop the trigger that copies src's messages into dst; src's functions are regenerated
--           without the copy.
-- Params:   src_queue_name  the queue copied from (text)
--           dst_queue_name  the queue copied to (text)
-- Returns:  void; MB002 when there is no such trigger
-- Locks:    pg_advisory_xact_lock(1835165041) (serializes every catalog change of queues:
--           create/drop of queues, consumers, triggers, clear_tempq); the CREATE OR REPLACE of
--           src's generated functions
-- Calls:    mbus.regenerate_queue
-- Tables:   mbus.queue_trigger
CREATE OR REPLACE FUNCTION mbus.drop_trigger(src_queue_name text, dst_queue_name text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1835165041);
    DELETE FROM mbus.queue_trigger AS tr
    WHERE tr.src = src_queue_name AND tr.dst = dst_queue_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('trigger %s -> %s does not exist', src_queue_name, dst_queue_name);
    END IF;
    PERFORM mbus.regenerate_queue(src_queue_name);
END;
$$;
