-- Function: mbus.current_cursor()
--
-- Purpose:  current_cursor(): the position a reader would reach now (a snapshot, as text).
-- Params:   none
-- Returns:  text
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.current_cursor()
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus._check_log();
    RETURN mbus._snapshot_now()::text;
END;
$$;
