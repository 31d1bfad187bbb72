-- Function: mbus._spark_top(p_cursor)
--
-- Purpose:  The xmax of the cursor's newest snapshot (hi of a partial cursor, else lo): no
--           transaction at or after it had started when the cursor was taken, so none of its
--           events is consumed at the cursor. The upper end of spark_read's txid range, and
--           the start of its fast path. IMMUTABLE like the other _spark_* parts, so that with
--           a literal cursor the planner folds it into a constant.
-- Params:   p_cursor  a stream cursor (text)
-- Returns:  xid8; MB006 for a malformed cursor
-- Locks:    none (computes only)
-- Callers:  mbus.spark_read
CREATE OR REPLACE FUNCTION mbus._spark_top(p_cursor text) RETURNS xid8
LANGUAGE sql IMMUTABLE
AS $$ SELECT pg_catalog.pg_snapshot_xmax(coalesce(mbus._spark_hi(p_cursor),
                                                  mbus._spark_lo(p_cursor))) $$;
