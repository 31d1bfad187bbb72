-- Function: mbus.spark_clean_staged(p_now, p_ttl)
--
-- Purpose:  Drop the staged rows, and the pending events (mbus._spark_settle), of every write
--           no task began staging into for p_ttl (or, when a server crash emptied its
--           registration, whose last pending attempt is that old), skipping writes that a task
--           is staging or a commit is publishing (their advisory lock is tried, never waited
--           for; the age is re-checked under it). These are writes whose driver died before
--           committing; should it still commit, it finds fewer rows than reported: MB008,
--           nothing published. Runs at the end of every spark_commit_write and in mbus.maintain.
-- Params:   p_now  the clock (NULL = now()); tests move it
--           p_ttl  the age after which a write is abandoned (NULL = setting spark.staged_ttl,
--                  default 1 day; MB006 outside that setting's bounds, 1 minute to 1 year)
-- Returns:  bigint: the number of staged rows and pending events dropped
-- Locks:    pg_try_advisory_xact_lock(mbus._spark_write_lock(write)) per abandoned write (skips
--           the write when held), held to commit; row locks of the mbus.spark_writes and
--           mbus.spark_staged rows it deletes, and those of mbus._spark_settle
-- Calls:    mbus._spark_settle, mbus._spark_write_lock, mbus.get_setting, mbus.given_clock
-- Tables:   mbus.spark_pending, mbus.spark_staged, mbus.spark_writes
CREATE OR REPLACE FUNCTION mbus.spark_clean_staged(
    p_now timestamptz DEFAULT NULL, p_ttl interval DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_cutoff timestamptz;
    v_write  text;
    v_n      bigint;
    v_total  bigint := 0;
BEGIN
    -- the setting's bounds (a ttl of a million years overflowed the subtraction: 22008)
    IF p_ttl < interval '1 minute' OR p_ttl > interval '1 year' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('ttl must be from 1 minute to 1 year, not %s', p_ttl);
    END IF;
    v_cutoff := coalesce(mbus.given_clock(p_now), now())
        - coalesce(p_ttl, (mbus.get_setting('spark.staged_ttl', '"1 day"') #>> '{}')::interval);
    FOR v_write IN
        SELECT w.write_id FROM mbus.spark_writes AS w
        WHERE w.last_staged_at < v_cutoff
        UNION
        -- pending attempts of writes no longer registered (mbus.spark_writes is unlogged: a
        -- server crash empties it, while the logged pending rows and their events remain)
        SELECT p.write_id FROM mbus.spark_pending AS p
        WHERE NOT EXISTS (SELECT 1 FROM mbus.spark_writes AS w WHERE w.write_id = p.write_id)
        GROUP BY p.write_id HAVING max(p.staged_at) < v_cutoff
        ORDER BY 1
    LOOP
        CONTINUE WHEN NOT pg_try_advisory_xact_lock(mbus._spark_write_lock(v_write));
        -- re-checked under the lock: a task may have begun staging since the loop's snapshot
        DELETE FROM mbus.spark_writes AS w
        WHERE w.write_id = v_write AND w.last_staged_at < v_cutoff;
        IF NOT FOUND THEN
            CONTINUE WHEN EXISTS (SELECT 1 FROM mbus.spark_writes AS w
                                  WHERE w.write_id = v_write);
            CONTINUE WHEN NOT EXISTS (SELECT 1 FROM mbus.spark_pending AS p
                                      WHERE p.write_id = v_write
                                      HAVING max(p.staged_at) < v_cutoff);
        END IF;
        DELETE FROM mbus.spark_staged AS s WHERE s.write_id = v_write;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_total := v_total + v_n + mbus._spark_settle(v_write, NULL);
    END LOOP;
    RETURN v_total;
END;
$$;
