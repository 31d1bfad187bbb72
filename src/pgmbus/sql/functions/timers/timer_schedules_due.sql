-- Function: mbus.timer_schedules_due(p_horizon_s, p_limit, p_now)
--
-- Purpose:  Lock and return the active schedules whose callbacks are generated less than
--           p_horizon_s ahead (and that have not ended), most behind first. Called inside the
--           scheduler's transaction, which computes their occurrences, calls
--           mbus.timer_schedule_materialize for each and commits; SKIP LOCKED, so two
--           schedulers never work on the same schedule at once and never wait for each other.
-- Params:   p_horizon_s  how far ahead callbacks are kept generated, in seconds (default 300)
--           p_limit      at most this many schedules (default 100)
--           p_now        the clock (NULL = now()); tests move it
-- Returns:  SETOF mbus.timer_schedules: the locked schedules in generated_until order; no row
--           when none is due
-- Locks:    row locks FOR UPDATE SKIP LOCKED of the returned schedules, held to commit
-- Calls:    mbus.given_clock
-- Tables:   mbus.timer_schedules
CREATE OR REPLACE FUNCTION mbus.timer_schedules_due(p_horizon_s double precision DEFAULT 300,
    p_limit integer DEFAULT 100, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.timer_schedules
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    SELECT s.* FROM mbus.timer_schedules AS s
    WHERE NOT s.paused
      AND s.generated_until
          < coalesce(mbus.given_clock(p_now), now()) + make_interval(secs => p_horizon_s)
      AND (s.end_at IS NULL OR s.generated_until < s.end_at)
    ORDER BY s.generated_until
    LIMIT p_limit
    FOR UPDATE SKIP LOCKED;
$$;
