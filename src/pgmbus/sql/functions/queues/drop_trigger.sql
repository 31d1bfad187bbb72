-- Function: mbus.drop_trigger(src_queue_name, dst_queue_name)
--
-- Purpose:  drop_trigger(src, dst).
-- Params:   src_queue_name text FILL
--           dst_queue_name text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
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
