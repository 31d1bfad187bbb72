-- Function: mbus.timer_callback_json(c)
--
-- Purpose:  The public JSON shape of a callback, what the HTTP API and the SQL API return: id,
--           group_key, event_key, run_at, originally_run_at, url, context, retry (fast_retries,
--           kind, delay_s, factor, max_delay_s), stop_after_delay_s, status, attempts,
--           webhook_id, schedule_key (of the schedule that generated it, or null),
--           last_status_code, last_error, created_at, updated_at, finished_at. Internal columns
--           (client_id, bucket_id, the claim) are left out.
-- Params:   c  the callback's row (mbus.timer_callbacks)
-- Returns:  jsonb object (NULL for a NULL row)
-- Locks:    none (reads the schedule's key)
-- Calls:    none
-- Tables:   mbus.timer_callbacks, mbus.timer_schedules
CREATE OR REPLACE FUNCTION mbus.timer_callback_json(c mbus.timer_callbacks)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
-- PL/pgSQL, not SQL: an SQL function with SET is never inlined, so its body was planned again
-- in every statement that called it (85 µs per call of timer_create for one timer); PL/pgSQL
-- keeps the plan for the session. The schedule's key is read by its own statement, only for
-- a callback a schedule generated: inside the RETURN it made the whole object a query, whose
-- custom plan (with a NULL schedule_id folded) PostgreSQL preferred and made again on every
-- call (45 µs per timer created, pg_stat_statements).
AS $$
DECLARE
    v_schedule_key text;
BEGIN
    IF c.schedule_id IS NOT NULL THEN
        SELECT s.schedule_key INTO v_schedule_key
        FROM mbus.timer_schedules AS s WHERE s.id = c.schedule_id;
    END IF;
    RETURN jsonb_build_object(
        'id', c.id, 'group_key', c.group_key, 'event_key', c.event_key,
        'run_at', c.run_at, 'originally_run_at', c.originally_run_at,
        'url', c.url, 'context', c.context,
        'retry', jsonb_build_object('fast_retries', c.fast_retries, 'kind', c.retry_kind,
                                    'delay_s', c.retry_delay_s, 'factor', c.retry_factor,
                                    'max_delay_s', c.retry_max_delay_s),
        'stop_after_delay_s', c.stop_after_delay_s,
        'status', c.status, 'attempts', c.attempts, 'webhook_id', c.webhook_id,
        'schedule_key', v_schedule_key,
        'last_status_code', c.last_status_code, 'last_error', c.last_error,
        'created_at', c.created_at, 'updated_at', c.updated_at, 'finished_at', c.finished_at);
END;
$$;
