-- Function: mbus._spark_xip(p_cursor)
--
-- Purpose:  FILL
-- Params:   p_cursor text FILL
-- Returns:  xid8[]
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._spark_xip(p_cursor text) RETURNS xid8[]
LANGUAGE sql IMMUTABLE
AS $$ SELECT ARRAY(SELECT pg_catalog.pg_snapshot_xip(mbus._spark_lo(p_cursor))) $$;
