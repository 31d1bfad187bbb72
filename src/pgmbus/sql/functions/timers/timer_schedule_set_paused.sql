-- Function: mbus.timer_schedule_set_paused(p_client_id, p_schedule_key, p_paused, p_now)
--
-- Purpose:  timer_schedule_set_paused(client, schedule_key, paused, now): pause (its generated pending
--           callbacks are removed) or resume (generation restarts from now; missed occurrences are not
--           made up). MB002 when there is no such schedule.
-- Params:   p_client_id bigint FILL
--           p_schedule_key text FILL
--           p_paused boolean FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  jsonb
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_schedule_set_paused(p_client_id bigint, p_schedule_key text,
    p_paused boolean, p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
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
        SET paused = false, generated_until = greatest(v_now, t.start_at), updated_at = v_now
        WHERE t.id = s.id RETURNING * INTO s;
    END IF;
    RETURN mbus.timer_schedule_json(s);
END;
$$;
