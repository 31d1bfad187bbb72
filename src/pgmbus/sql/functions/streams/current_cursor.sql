-- Function: mbus.current_cursor()
--
-- Purpose:  The position a reader would reach now: the current snapshot as a cursor (its own
--           transaction counted as in progress, see mbus._snapshot_now). Every event committed
--           before it is consumed at that position, every later one is not; with read_between it
--           bounds replays and Spark micro-batches.
-- Params:   none
-- Returns:  text: a cursor of the form '<snap>'; MB009 when the log is not this cluster's
-- Locks:    none
-- Calls:    mbus._check_log, mbus._snapshot_now
-- Tables:   none
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
