-- Function: mbus.timer_schedules_due(p_horizon_s, p_limit, p_now)
--
-- Purpose:  timer_schedules_due(horizon_s, limit, now): lock (SKIP LOCKED) and return active schedules
--           whose callbacks are generated less than horizon_s ahead. Called inside the scheduler's
--           transaction, which then calls timer_schedule_materialize for each and commits; two
--           schedulers therefore never work on the same schedule at once.
-- Params:   p_horizon_s double precision DEFAULT 300 FILL
--           p_limit integer DEFAULT 100 FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  SETOF mbus.timer_schedules
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_schedules_due(p_horizon_s double precision DEFAULT 300,
    p_limit integer DEFAULT 100, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.timer_schedules
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    SELECT s.* FROM mbus.timer_schedules AS s
    WHERE NOT s.paused
      AND s.generated_until < coalesce(p_now, now()) + make_interval(secs => p_horizon_s)
      AND (s.end_at IS NULL OR s.generated_until < s.end_at)
    ORDER BY s.generated_until
    LIMIT p_limit
    FOR UPDATE SKIP LOCKED;
$$;
