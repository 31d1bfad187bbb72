-- Function: mbus.spark_clean_staged(p_now, p_ttl)
--
-- Purpose:  spark_clean_staged(p_now, p_ttl): drop the staged rows of every write no task began staging
--           into for p_ttl (default: setting spark.staged_ttl), skipping writes that a task is staging
--           or a commit is publishing right now. Such rows belong to writes whose driver died before
--           committing: a committed write's rows are dropped by its commit. Should that driver still
--           commit later, it finds fewer rows than its tasks reported and refuses (MB008, nothing is
--           published). Returns the number of staged rows dropped.
-- Params:   p_now timestamptz DEFAULT NULL FILL
--           p_ttl interval DEFAULT NULL FILL
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.spark_clean_staged(
    p_now timestamptz DEFAULT NULL, p_ttl interval DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_cutoff timestamptz := coalesce(p_now, now())
        - coalesce(p_ttl, (mbus.get_setting('spark.staged_ttl', '"1 day"') #>> '{}')::interval);
    v_write  text;
    v_n      bigint;
    v_total  bigint := 0;
BEGIN
    FOR v_write IN
        SELECT w.write_id FROM mbus.spark_writes AS w
        WHERE w.last_staged_at < v_cutoff ORDER BY w.write_id
    LOOP
        CONTINUE WHEN NOT pg_try_advisory_xact_lock(mbus._spark_write_lock(v_write));
        -- re-checked under the lock: a task may have begun staging since the loop's snapshot
        DELETE FROM mbus.spark_writes AS w
        WHERE w.write_id = v_write AND w.last_staged_at < v_cutoff;
        CONTINUE WHEN NOT FOUND;
        DELETE FROM mbus.spark_staged AS s WHERE s.write_id = v_write;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_total := v_total + v_n;
    END LOOP;
    RETURN v_total;
END;
$$;
