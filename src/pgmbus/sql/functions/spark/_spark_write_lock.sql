-- Function: mbus._spark_write_lock(p_write_id)
--
-- Purpose:  The advisory lock key of a Spark write: hashtextextended('mbus.spark_write:' ||
--           write_id, 0). Tasks hold it shared while they stage (mbus.spark_lock_stage), the
--           commit (spark_commit_write) and the cleanup (spark_clean_staged) exclusively: the
--           cleanup never drops rows a task is staging or a commit is publishing.
-- Params:   p_write_id  the write's id (text)
-- Returns:  bigint: the key for pg_advisory_xact_lock and its variants
-- Locks:    none (computes the key only)
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus._spark_write_lock(p_write_id text) RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$ SELECT pg_catalog.hashtextextended('mbus.spark_write:' || p_write_id, 0) $$;
