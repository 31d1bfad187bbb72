-- Function: mbus.timer_schedule_set_paused(p_client_id, p_schedule_key, p_paused, p_now)
--
-- Purpose:  Pause or resume a schedule. Pausing removes its generated pending callbacks that
--           are not claimed (mbus.timer_schedule_drop_pending); resuming restarts generation
--           from now (or start_at, if later): occurrences missed while paused are not made up,
--           and the reason of a pause by the scheduler (paused_reason) is cleared. Pausing a
--           paused or resuming an active schedule changes nothing.
-- Params:   p_client_id     the owner client's id (bigint)
--           p_schedule_key  the schedule's key (text)
--           p_paused        true to pause, false to resume
--           p_now           the clock (NULL = now()); tests move it
-- Returns:  jsonb: the schedule (mbus.timer_schedule_json); MB002 when there is no such
--           schedule
-- Locks:    row lock FOR UPDATE of the schedule (waits for a scheduler materializing it), then
--           UPDATE; those of timer_schedule_drop_pending; held to commit
-- Calls:    mbus.given_clock, mbus.timer_schedule_drop_pending, mbus.timer_schedule_json
-- Tables:   mbus.timer_schedules
CREATE OR REPLACE FUNCTION mbus.timer_schedule_set_paused(p_client_id bigint,
    p_schedule_key text, p_paused boolean, p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), now());
    s mbus.timer_schedules;
BEGIN
    SELECT * INTO s FROM mbus.timer_schedules AS t
    WHERE t.client_id = p_client_id AND t.schedule_key = p_schedule_key FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('no schedule %L', p_schedule_key);
    END IF;
    IF p_paused AND NOT s.paused THEN
        PERFORM mbus.timer_schedule_drop_pending(s.id, v_now);
        UPDATE mbus.timer_schedules AS t SET paused = true, updated_at = v_now
        WHERE t.id = s.id RETURNING * INTO s;
    ELSIF NOT p_paused AND s.paused THEN
        UPDATE mbus.timer_schedules AS t
        SET paused = false, paused_reason = NULL, generated_until = greatest(v_now, t.start_at),
            updated_at = v_now
        WHERE t.id = s.id RETURNING * INTO s;
    END IF;
    RETURN mbus.timer_schedule_json(s);
END;
$$;
