-- Function: mbus._spark_bottom(p_cursor)
--
-- Purpose:  The xmin of the cursor's (first) snapshot: every transaction before it had ended
--           when the cursor was taken, so each of their committed events is consumed at the
--           cursor. The end of spark_read's fast path. IMMUTABLE like the other _spark_* parts,
--           so that with a literal cursor the planner folds it into a constant.
-- Params:   p_cursor  a stream cursor (text)
-- Returns:  xid8; MB006 for a malformed cursor
-- Locks:    none (computes only)
-- Callers:  mbus.spark_read
CREATE OR REPLACE FUNCTION mbus._spark_bottom(p_cursor text) RETURNS xid8
LANGUAGE sql IMMUTABLE
AS $$ SELECT pg_catalog.pg_snapshot_xmin(mbus._spark_lo(p_cursor)) $$;
