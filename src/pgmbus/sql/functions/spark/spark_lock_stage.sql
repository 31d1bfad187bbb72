-- Function: mbus.spark_lock_stage(p_write_id)
--
-- Purpose:  Taken first in a task's staging transaction, before its COPY into
--           mbus.spark_staged: the write's advisory lock, shared, so the tasks of a write stage
--           at once while the commit (spark_commit_write) waits for them and the cleanup
--           (spark_clean_staged) leaves the write alone.
-- Params:   p_write_id  the write's id (text)
-- Returns:  void
-- Locks:    pg_advisory_xact_lock_shared(mbus._spark_write_lock(p_write_id)), held to the end
--           of the task's transaction; waits while a commit or cleanup holds it exclusively
-- Callers:  Python pgmbus.spark.writer.stage via sql/spark.sql 'lock_stage';
--           tests/spark/test_spark_sql.py
CREATE OR REPLACE FUNCTION mbus.spark_lock_stage(p_write_id text)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$ SELECT pg_catalog.pg_advisory_xact_lock_shared(mbus._spark_write_lock(p_write_id)) $$;
