-- Function: mbus.timer_schedule_create(p_client_id, p_schedule_key, p_url, p_cron, ...)
--
-- Purpose:  Create a recurring schedule: a cron expression in a time zone, or a fixed interval
--           from start_at; its target is a URL (an HTTP callback per occurrence) or a queue (a
--           message per occurrence). Idempotent on (client, schedule_key): an existing schedule
--           is returned unchanged with created = false. Checked first (MB006 with the reason,
--           nothing stored): keys, exactly one of url and queue and of cron and interval_s, the
--           cron (mbus.timer_cron_problem), time zone, start_at/end_at, url, context and retry
--           policy (mbus.timer_field_problem, timer_retry_problem). Occurrences are materialized
--           ahead by the scheduler (mbus.timer_schedule_materialize) from start_at.
-- Params:   p_client_id           the owner client's id (bigint)
--           p_schedule_key        the schedule's key (text)
--           p_url                 the http(s) URL its callbacks POST to (text), or NULL
--                                 with p_queue
--           p_cron                a cron expression (text), or NULL with p_interval_s
--           p_timezone            the IANA time zone of the cron expression (default 'UTC')
--           p_interval_s          the interval in seconds (integer), or NULL with p_cron
--           p_group_key           the group key of its callbacks (NULL = p_schedule_key)
--           p_context             the JSON object sent with each call (default '{}')
--           p_retry               the retry policy of its callbacks (NULL = defaults)
--           p_stop_after_delay_s  give up retrying an occurrence this long after its time
--                                 (NULL = 86400)
--           p_start_at            the first possible occurrence (NULL = now)
--           p_end_at              no occurrence at or after it (NULL = never ends)
--           p_now                 the clock (NULL = now()); tests move it
--           p_queue               the queue its occurrences post to (text), or NULL with
--                                 p_url
-- Returns:  one row (created boolean, schedule jsonb (mbus.timer_schedule_json)); MB006 for
--           any value refused above or a NULL client id, MB002 for a client that does not
--           exist
-- Locks:    inserts the mbus.timer_schedules row; a concurrent insert of the same key makes it
--           wait for that transaction (ON CONFLICT on the unique key); with p_queue,
--           mbus.require_queue's (none: reads the catalog)
-- Calls:    mbus.given_clock, mbus.require_queue, mbus.timer_cron_problem,
--           mbus.timer_field_problem, mbus.timer_limits, mbus.timer_retry_policy,
--           mbus.timer_retry_problem, mbus.timer_schedule_json, mbus.timer_time_problem
-- Tables:   mbus.timer_clients, mbus.timer_schedules
-- Design:   docs/DESIGN.md#timer_schedule_create-what-is-checked-where
CREATE OR REPLACE FUNCTION mbus.timer_schedule_create(p_client_id bigint, p_schedule_key text,
    p_url text DEFAULT NULL, p_cron text DEFAULT NULL, p_timezone text DEFAULT 'UTC',
    p_interval_s integer DEFAULT NULL, p_group_key text DEFAULT NULL,
    p_context jsonb DEFAULT '{}', p_retry jsonb DEFAULT NULL,
    p_stop_after_delay_s double precision DEFAULT NULL, p_start_at timestamptz DEFAULT NULL,
    p_end_at timestamptz DEFAULT NULL, p_now timestamptz DEFAULT NULL,
    p_queue text DEFAULT NULL, OUT created boolean, OUT schedule jsonb)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), now());
    v_problem text;
    s mbus.timer_schedules;
BEGIN
    IF p_client_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'client_id is required';
    END IF;
    IF p_schedule_key IS NULL OR length(p_schedule_key) NOT BETWEEN 1 AND 200
       OR p_schedule_key ~ '[/@[:cntrl:]]' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'schedule_key must be 1 to 200 characters, without "/", "@" and control '
                      'characters';
    END IF;
    IF p_group_key IS NOT NULL AND (length(p_group_key) NOT BETWEEN 1 AND 256
                                    OR p_group_key ~ '[/[:cntrl:]]') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'group_key must be 1 to 256 characters, without "/" and control characters';
    END IF;
    IF (p_url IS NULL) = (p_queue IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'a schedule needs exactly one target: url or queue';
    END IF;
    IF p_queue IS NOT NULL THEN
        BEGIN
            PERFORM mbus.require_queue(p_queue);
        EXCEPTION WHEN SQLSTATE 'MB001' OR SQLSTATE 'MB002' THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('queue %s does not exist', left(p_queue, 64));
        END;
    END IF;
    IF (p_cron IS NULL) = (p_interval_s IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'a schedule needs exactly one of cron and interval_s';
    END IF;
    IF p_interval_s IS NOT NULL AND p_interval_s NOT BETWEEN 1 AND 31622400 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'interval_s must be from 1 to 31622400 (366 days)';
    END IF;
    v_problem := coalesce(
        mbus.timer_cron_problem(p_cron),
        CASE WHEN length(p_timezone) > 64 THEN 'timezone must be at most 64 characters' END,
        mbus.timer_time_problem('start_at', p_start_at),
        mbus.timer_time_problem('end_at', p_end_at),
        mbus.timer_field_problem(mbus.timer_limits(), p_url => p_url,
                                 p_context => coalesce(p_context, '{}'),
                                 p_stop_after_delay_s => p_stop_after_delay_s),
        mbus.timer_retry_problem(p_retry));
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = v_problem;
    END IF;
    IF p_end_at IS NOT NULL AND p_end_at <= coalesce(p_start_at, v_now) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'end_at must be after start_at';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_timezone_names WHERE name = coalesce(p_timezone, 'UTC')) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('unknown time zone %L', p_timezone);
    END IF;
    -- Named here: the foreign key would raise 23503 naming only a constraint.
    IF NOT EXISTS (SELECT FROM mbus.timer_clients AS k WHERE k.id = p_client_id) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('timer client %s does not exist', p_client_id);
    END IF;
    INSERT INTO mbus.timer_schedules AS t (client_id, schedule_key, group_key, cron, timezone,
        interval_s, start_at, end_at, url, queue, context, retry, stop_after_delay_s,
        generated_until, created_at, updated_at)
    VALUES (p_client_id, p_schedule_key, coalesce(p_group_key, p_schedule_key), p_cron,
            coalesce(p_timezone, 'UTC'), p_interval_s, coalesce(p_start_at, v_now), p_end_at,
            p_url, p_queue, coalesce(p_context, '{}'), mbus.timer_retry_policy(p_retry),
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
