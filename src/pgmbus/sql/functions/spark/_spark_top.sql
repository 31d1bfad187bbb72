-- Function: mbus._spark_top(p_cursor)
--
-- Purpose:  FILL
-- Params:   p_cursor text FILL
-- Returns:  xid8
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._spark_top(p_cursor text) RETURNS xid8
LANGUAGE sql IMMUTABLE
AS $$ SELECT pg_catalog.pg_snapshot_xmax(coalesce(mbus._spark_hi(p_cursor),
                                                  mbus._spark_lo(p_cursor))) $$;
