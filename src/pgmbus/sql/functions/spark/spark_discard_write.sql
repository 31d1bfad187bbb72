-- Function: mbus.spark_discard_write(p_write_id)
--
-- Purpose:  Drop every staged row of a write (all task attempts), the events its attempts
--           copied into mbus.events while pending (mbus._spark_settle, keeping none) and its
--           mbus.spark_writes registration: after a commit has published them, on a replayed
--           batch, or when Spark aborts the write. Takes the write's advisory lock exclusively
--           first, as spark_clean_staged and spark_commit_write do, so it waits for tasks
--           still staging (they hold it shared) and then drops their rows too: an aborted write leaves no
--           staged rows behind. A task that begins staging after it
--           registers the write again (spark_lock_stage), so spark_clean_staged finds its rows.
-- Params:   p_write_id  the write's id (text)
-- Returns:  bigint: the number of staged rows and pending events dropped
-- Locks:    pg_advisory_xact_lock(mbus._spark_write_lock(p_write_id)), held to commit (waits
--           for tasks staging into the write; reentrant inside spark_commit_write, which holds
--           it already); row locks of the mbus.spark_staged and mbus.spark_writes rows it
--           deletes, held to commit
-- Calls:    mbus._spark_settle, mbus._spark_write_lock
-- Tables:   mbus.spark_staged, mbus.spark_writes
CREATE OR REPLACE FUNCTION mbus.spark_discard_write(p_write_id text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_n bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(mbus._spark_write_lock(p_write_id));
    DELETE FROM mbus.spark_staged WHERE write_id = p_write_id;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    DELETE FROM mbus.spark_writes WHERE write_id = p_write_id;
    RETURN v_n + mbus._spark_settle(p_write_id, NULL);
END;
$$;
