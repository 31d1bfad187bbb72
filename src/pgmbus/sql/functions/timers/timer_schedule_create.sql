-- Function: mbus.timer_schedule_create()
--
-- Purpose:  timer_schedule_create(...): create a schedule (cron + timezone, or interval_s); idempotent
--           on (client, schedule_key): an existing schedule is returned unchanged with created = false.
--           Cron expressions are evaluated by the scheduler (pgmbus dispatcher); the time zone must be
--           known to the server (MB006 otherwise).
-- Params:   none
-- Returns:  FILL
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_schedule_create(p_client_id bigint, p_schedule_key text,
    p_url text, p_cron text DEFAULT NULL, p_timezone text DEFAULT 'UTC',
    p_interval_s integer DEFAULT NULL, p_group_key text DEFAULT NULL,
    p_context jsonb DEFAULT '{}', p_retry jsonb DEFAULT NULL,
    p_stop_after_delay_s double precision DEFAULT NULL, p_start_at timestamptz DEFAULT NULL,
    p_end_at timestamptz DEFAULT NULL, p_now timestamptz DEFAULT NULL,
    OUT created boolean, OUT schedule jsonb)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    s mbus.timer_schedules;
BEGIN
    IF (p_cron IS NULL) = (p_interval_s IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'a schedule needs exactly one of cron and interval_s';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_timezone_names WHERE name = coalesce(p_timezone, 'UTC')) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('unknown time zone %L', p_timezone);
    END IF;
    INSERT INTO mbus.timer_schedules AS t (client_id, schedule_key, group_key, cron, timezone,
        interval_s, start_at, end_at, url, context, retry, stop_after_delay_s, generated_until,
        created_at, updated_at)
    VALUES (p_client_id, p_schedule_key, coalesce(p_group_key, p_schedule_key), p_cron,
            coalesce(p_timezone, 'UTC'), p_interval_s, coalesce(p_start_at, v_now), p_end_at,
            p_url, coalesce(p_context, '{}'), mbus.timer_retry_policy(p_retry),
            coalesce(p_stop_after_delay_s, 86400), coalesce(p_start_at, v_now), v_now, v_now)
    ON CONFLICT (client_id, schedule_key) DO NOTHING
    RETURNING * INTO s;
    created := s.id IS NOT NULL;
    IF NOT created THEN
        SELECT * INTO s FROM mbus.timer_schedules AS t
        WHERE t.client_id = p_client_id AND t.schedule_key = p_schedule_key;
    END IF;
    schedule := mbus.timer_schedule_json(s);
END;
$$;
