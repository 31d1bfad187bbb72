-- Function: mbus.spark_begin_stage(p_write_id, p_now)
--
-- Purpose:  Register a write that a task begins staging into: its mbus.spark_writes row is
--           created, or its last_staged_at moved forward. The cleanup (spark_clean_staged)
--           scans these rows, not the staged rows, and drops only writes nobody began staging
--           into for spark.staged_ttl. Run in a short transaction of its own, before the task's
--           staging transaction (mbus.spark_lock_stage, then COPY), so that tasks of one write
--           never wait for each other on this row for longer than this statement.
-- Params:   p_write_id  the write's id (text)
--           p_now       the clock (NULL = now()); tests move it
-- Returns:  void
-- Locks:    row lock of the write's mbus.spark_writes row (INSERT ... ON CONFLICT DO UPDATE),
--           held to commit; waits for another task's begin_stage of the same write
-- Calls:    mbus.given_clock
-- Tables:   mbus.spark_writes
CREATE OR REPLACE FUNCTION mbus.spark_begin_stage(p_write_id text, p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    INSERT INTO mbus.spark_writes AS w (write_id, first_staged_at, last_staged_at)
    SELECT p_write_id, c.now, c.now
    FROM (SELECT coalesce(mbus.given_clock(p_now), now()) AS now) AS c
    ON CONFLICT (write_id) DO UPDATE
    SET last_staged_at = greatest(w.last_staged_at, excluded.last_staged_at);
$$;
