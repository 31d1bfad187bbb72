-- Function: mbus._spark_xip(p_cursor)
--
-- Purpose:  The transactions in progress in the cursor's lo snapshot (mbus._spark_lo): their
--           events are not consumed at the cursor although their ids are below its xmax. A
--           cursor part as a constant for spark_read (an = ANY index condition), like
--           mbus._spark_lo (IMMUTABLE, inlined, folded).
-- Params:   p_cursor  a stream cursor (text)
-- Returns:  xid8[] ('{}' when none was in progress); MB006 for a malformed cursor
-- Locks:    none (computes only)
-- Callers:  mbus.spark_read
CREATE OR REPLACE FUNCTION mbus._spark_xip(p_cursor text) RETURNS xid8[]
LANGUAGE sql IMMUTABLE
AS $$ SELECT ARRAY(SELECT pg_catalog.pg_snapshot_xip(mbus._spark_lo(p_cursor))) $$;
