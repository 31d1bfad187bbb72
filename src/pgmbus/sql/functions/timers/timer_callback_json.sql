-- Function: mbus.timer_callback_json(c)
--
-- Purpose:  callbacks: JSON view, create, get, list, update, cancel, delete, history
--           timer_callback_json(c): the public JSON shape of a callback (what the HTTP API returns).
-- Params:   c mbus.timer_callbacks FILL
-- Returns:  jsonb
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_callback_json(c mbus.timer_callbacks)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT jsonb_build_object(
        'id', c.id, 'group_key', c.group_key, 'event_key', c.event_key,
        'run_at', c.run_at, 'originally_run_at', c.originally_run_at,
        'url', c.url, 'context', c.context,
        'retry', jsonb_build_object('fast_retries', c.fast_retries, 'kind', c.retry_kind,
                                    'delay_s', c.retry_delay_s, 'factor', c.retry_factor,
                                    'max_delay_s', c.retry_max_delay_s),
        'stop_after_delay_s', c.stop_after_delay_s,
        'status', c.status, 'attempts', c.attempts, 'webhook_id', c.webhook_id,
        'schedule_key', (SELECT s.schedule_key FROM mbus.timer_schedules AS s
                         WHERE s.id = c.schedule_id),
        'last_status_code', c.last_status_code, 'last_error', c.last_error,
        'created_at', c.created_at, 'updated_at', c.updated_at, 'finished_at', c.finished_at);
$$;
