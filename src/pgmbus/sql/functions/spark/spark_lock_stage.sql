-- Function: mbus.spark_lock_stage(p_write_id)
--
-- Purpose:  Taken first in a task's staging transaction, before its COPY into
--           mbus.spark_staged: the write's advisory lock, shared, so the tasks of a write stage
--           at once while the commit (spark_commit_write) waits for them and the cleanup
--           (spark_clean_staged) leaves the write alone. Then it makes sure the write is
--           registered in mbus.spark_writes (INSERT ... ON CONFLICT DO NOTHING): should Spark
--           have aborted or committed the write between the task's spark_begin_stage and this
--           (spark_discard_write deletes the registration), the rows staged now would be seen
--           by no cleanup at all; registered, spark_clean_staged drops them after
--           spark.staged_ttl (FOUND_BUGS spark 2).
-- Params:   p_write_id  the write's id (text)
-- Returns:  void
-- Locks:    pg_advisory_xact_lock_shared(mbus._spark_write_lock(p_write_id)), held to the end
--           of the task's transaction; waits while a commit, abort or cleanup holds it
--           exclusively; the write's mbus.spark_writes row when it inserts it
-- Calls:    mbus._spark_write_lock
-- Tables:   mbus.spark_writes
CREATE OR REPLACE FUNCTION mbus.spark_lock_stage(p_write_id text)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    SELECT pg_catalog.pg_advisory_xact_lock_shared(mbus._spark_write_lock(p_write_id));
    INSERT INTO mbus.spark_writes AS w (write_id, first_staged_at, last_staged_at)
    VALUES (p_write_id, now(), now())
    ON CONFLICT (write_id) DO NOTHING;
$$;
