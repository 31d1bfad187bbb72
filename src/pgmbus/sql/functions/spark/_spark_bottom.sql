-- Function: mbus._spark_bottom(p_cursor)
--
-- Purpose:  _spark_bottom(cursor): the xmin of the cursor's (first) snapshot: every transaction before
--           it had ended when the cursor was taken. IMMUTABLE like the other _spark_* parts, so that
--           with a literal cursor the planner folds it into a constant.
-- Params:   p_cursor text FILL
-- Returns:  xid8
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._spark_bottom(p_cursor text) RETURNS xid8
LANGUAGE sql IMMUTABLE
AS $$ SELECT pg_catalog.pg_snapshot_xmin(mbus._spark_lo(p_cursor)) $$;
