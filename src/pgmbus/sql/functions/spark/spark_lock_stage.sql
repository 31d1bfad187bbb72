-- Function: mbus.spark_lock_stage(p_write_id)
--
-- Purpose:  Taken first in a task's staging transaction, before its COPY into
--           mbus.spark_staged: the write's advisory lock, shared (the tasks of a write stage at
--           once, the commit waits for them, the cleanup leaves the write alone); then it makes
--           sure the write is registered in mbus.spark_writes (INSERT ... ON CONFLICT DO
--           NOTHING), so the rows it stages are always seen by spark_clean_staged.
-- Params:   p_write_id  the write's id (text)
-- Returns:  void
-- Locks:    pg_advisory_xact_lock_shared(mbus._spark_write_lock(p_write_id)), held to the end
--           of the task's transaction; waits while a commit, abort or cleanup holds it
--           exclusively; the write's mbus.spark_writes row when it inserts it
-- Calls:    mbus._spark_write_lock
-- Tables:   mbus.spark_writes
-- Design:   docs/DESIGN.md#spark_commit_write-and-spark_lock_stage-the-steps-of-a-commit
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
