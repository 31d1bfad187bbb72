-- Function: mbus.timer_schedule_pause_broken(p_schedule_id, p_reason, p_now)
--
-- Purpose:  The scheduler could not compute the schedule's next runs (a cron that never fires,
--           stored through SQL or before the checks) or create them (a value now over a
--           limit): pause it with the reason (paused_reason, at most 500 characters, shown by
--           the API) and drop its generated pending callbacks, instead of failing, and
--           logging, every pass. The client sees why and resumes it like any paused schedule.
--           No-op when the schedule is gone or paused already.
-- Params:   p_schedule_id, p_reason, p_now (NULL = now())
-- Returns:  void
-- Locks:    the schedule's row (UPDATE) to commit
-- Calls:    mbus.given_clock, mbus.timer_schedule_drop_pending
-- Tables:   mbus.timer_schedules
CREATE OR REPLACE FUNCTION mbus.timer_schedule_pause_broken(p_schedule_id bigint,
    p_reason text, p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), now());
BEGIN
    UPDATE mbus.timer_schedules AS t
    SET paused = true, paused_reason = left(coalesce(p_reason, 'unknown'), 500),
        updated_at = v_now
    WHERE t.id = p_schedule_id AND NOT t.paused;
    IF FOUND THEN
        PERFORM mbus.timer_schedule_drop_pending(p_schedule_id, v_now);
    END IF;
END;
$$;
