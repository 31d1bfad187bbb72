-- Function: mbus.timer_schedule_json(s)
--
-- Purpose:  The public JSON shape of a schedule, what the HTTP API and the SQL API return: id,
--           schedule_key, group_key, cron, timezone, interval_s, start_at, end_at, url and
--           queue (its target: one of them is null), context, retry, stop_after_delay_s, paused, paused_reason (why the scheduler paused
--           it; NULL when running or paused by its client), generated_until, created_at,
--           updated_at (not client_id).
-- Params:   s  the schedule's row (mbus.timer_schedules)
-- Returns:  jsonb object
-- Locks:    none (computes only)
-- Calls:    none
-- Tables:   mbus.timer_schedules
CREATE OR REPLACE FUNCTION mbus.timer_schedule_json(s mbus.timer_schedules)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT jsonb_build_object(
        'id', s.id, 'schedule_key', s.schedule_key, 'group_key', s.group_key, 'cron', s.cron,
        'timezone', s.timezone, 'interval_s', s.interval_s, 'start_at', s.start_at,
        'end_at', s.end_at, 'url', s.url, 'queue', s.queue, 'context', s.context, 'retry', s.retry,
        'stop_after_delay_s', s.stop_after_delay_s, 'paused', s.paused,
        'paused_reason', s.paused_reason,
        'generated_until', s.generated_until, 'created_at', s.created_at,
        'updated_at', s.updated_at);
$$;
