-- Function: mbus.timer_clean_if_due(p_ttl_days, p_every_s, p_now)
--
-- Purpose:  Run mbus.timer_clean when it last ran more than p_every_s ago (default: daily).
--           Every dispatcher calls it; the 'clean' row of mbus.timer_jobs is taken FOR UPDATE
--           SKIP LOCKED, so while one dispatcher cleans the others return at once, and the
--           cleanup records its run before it commits, so it runs once per period.
-- Params:   p_ttl_days  passed to timer_clean: keep this many days (integer, default 30)
--           p_every_s   the period in seconds (default 86400)
--           p_now       the clock (NULL = now()); tests move it
-- Returns:  boolean: true when it ran the cleanup, false when it was not due or another
--           transaction holds the job
-- Locks:    row lock FOR UPDATE SKIP LOCKED of the 'clean' row of mbus.timer_jobs, held to
--           commit; then those of mbus.timer_clean
-- Calls:    mbus.given_clock, mbus.timer_clean
-- Tables:   mbus.timer_jobs
CREATE OR REPLACE FUNCTION mbus.timer_clean_if_due(p_ttl_days integer DEFAULT 30,
    p_every_s double precision DEFAULT 86400, p_now timestamptz DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), now());
    v_last timestamptz;
BEGIN
    SELECT j.last_run_at INTO v_last FROM mbus.timer_jobs AS j
    WHERE j.name = 'clean' FOR UPDATE SKIP LOCKED;
    IF NOT FOUND OR (v_last IS NOT NULL
                     AND v_last > v_now - make_interval(secs => p_every_s)) THEN
        RETURN false;
    END IF;
    PERFORM mbus.timer_clean(p_ttl_days, v_now);
    RETURN true;
END;
$$;
