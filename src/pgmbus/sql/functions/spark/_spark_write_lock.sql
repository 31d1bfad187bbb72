-- Function: mbus._spark_write_lock(p_write_id)
--
-- Purpose:  _spark_write_lock(write_id): the advisory lock key of a write. Tasks hold it shared while
--           they stage, the commit and the cleanup exclusively: the cleanup never drops rows a task is
--           staging or a commit is publishing.
-- Params:   p_write_id text FILL
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._spark_write_lock(p_write_id text) RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$ SELECT pg_catalog.hashtextextended('mbus.spark_write:' || p_write_id, 0) $$;
