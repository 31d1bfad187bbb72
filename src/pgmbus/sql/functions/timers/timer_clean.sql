-- Function: mbus.timer_clean(p_ttl_days, p_now)
--
-- Purpose:  Delete old history, as the CallMeBack design's daily cleanup does: finished
--           callbacks (status <> 'pending') whose run_at is older than p_ttl_days, with their
--           attempts (ON DELETE CASCADE), and change log rows older than p_ttl_days (also those
--           of callbacks still pending), and the records of queue-schedule occurrences posted
--           (mbus.timer_schedule_posts) older than p_ttl_days (the schedule's generated_until,
--           past them, keeps them from being posted again). Records its run in mbus.timer_jobs ('clean'), which
--           mbus.timer_clean_if_due reads.
-- Params:   p_ttl_days  keep this many days (integer, default 30; MB006 unless from 0 to 36500:
--                       a larger one made the cut-off time overflow)
--           p_now       the clock (NULL = now()); tests move it
-- Returns:  one row (callbacks bigint, changes bigint): how many callbacks and change log rows
--           were deleted
-- Locks:    row locks of the deleted callbacks, their attempts, change log rows and posted
--           records (waits for a
--           transaction holding one); row lock of the 'clean' row of mbus.timer_jobs, held to
--           commit
-- Calls:    mbus.given_clock
-- Tables:   mbus.timer_callbacks, mbus.timer_change_log, mbus.timer_jobs, mbus.timer_schedule_posts
CREATE OR REPLACE FUNCTION mbus.timer_clean(p_ttl_days integer DEFAULT 30,
    p_now timestamptz DEFAULT NULL, OUT callbacks bigint, OUT changes bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_before timestamptz;
BEGIN
    IF p_ttl_days IS NULL OR p_ttl_days NOT BETWEEN 0 AND 36500 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'ttl_days must be from 0 to 36500';
    END IF;
    v_before := coalesce(mbus.given_clock(p_now), now()) - make_interval(days => p_ttl_days);
    WITH gone AS (
        DELETE FROM mbus.timer_callbacks AS c
        WHERE c.status <> 'pending' AND c.run_at < v_before RETURNING 1)
    SELECT count(*) INTO callbacks FROM gone;
    WITH gone AS (
        DELETE FROM mbus.timer_change_log AS l WHERE l.at < v_before RETURNING 1)
    SELECT count(*) INTO changes FROM gone;
    DELETE FROM mbus.timer_schedule_posts AS p WHERE p.run_at < v_before;
    UPDATE mbus.timer_jobs AS j SET last_run_at = coalesce(mbus.given_clock(p_now), now())
    WHERE j.name = 'clean';
END;
$$;
