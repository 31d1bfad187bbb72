-- Function: mbus.timer_schedule_create(p_client_id, p_schedule_key, p_url, p_cron, ...)
--
-- Purpose:  Create a recurring schedule: a cron expression evaluated in a time zone, or a
--           fixed interval from start_at. Idempotent on (client, schedule_key): an existing
--           schedule is returned unchanged with created = false. Cron expressions are evaluated
--           (and checked, by the HTTP service) in Python by pgmbus.timers.scheduler, which
--           materializes occurrences ahead (mbus.timer_schedules_due,
--           timer_schedule_materialize); here the time zone must be known to the server. The
--           retry policy is completed by mbus.timer_retry_policy; generation starts at
--           start_at.
-- Params:   p_client_id           the owner client's id (bigint)
--           p_schedule_key        the schedule's key (text; no '/' or control characters)
--           p_url                 the http(s) URL its callbacks POST to (text)
--           p_cron                a cron expression (text), or NULL with p_interval_s
--           p_timezone            the IANA time zone of the cron expression (default 'UTC')
--           p_interval_s          the interval in seconds (integer >= 1), or NULL with p_cron
--           p_group_key           the group key of its callbacks (NULL = p_schedule_key)
--           p_context             the JSON object sent with each call (default '{}')
--           p_retry               the retry policy of its callbacks (NULL = defaults)
--           p_stop_after_delay_s  give up retrying an occurrence this long after its time
--                                 (NULL = 86400)
--           p_start_at            the first possible occurrence (NULL = now)
--           p_end_at              no occurrence at or after it (NULL = never ends)
--           p_now                 the clock (NULL = now()); tests move it
-- Returns:  one row (created boolean, schedule jsonb (mbus.timer_schedule_json)); MB006 unless
--           exactly one of cron and interval_s is given, or for an unknown time zone or a bad
--           retry policy
-- Locks:    inserts the mbus.timer_schedules row; a concurrent insert of the same key makes it
--           wait for that transaction (ON CONFLICT on the unique key)
-- Callers:  Python pgmbus.timers.store.create_schedule via sql/timers.sql 'schedule_create',
--           used by the HTTP service (POST /v1/schedules); users directly (not a public entry
--           point); tests under tests/timers
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
