-- Function: mbus.timer_create()
--
-- Purpose:  timer_create(...): create one callback (idempotent on the key); see timer_create_many.
-- Params:   none
-- Returns:  FILL
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_create(
    p_client_id bigint, p_group_key text, p_event_key text, p_run_at timestamptz, p_url text,
    p_context jsonb DEFAULT '{}', p_retry jsonb DEFAULT NULL,
    p_stop_after_delay_s double precision DEFAULT NULL,
    p_originally_run_at timestamptz DEFAULT NULL, p_now timestamptz DEFAULT NULL,
    OUT created boolean, OUT callback jsonb)
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    SELECT m.created, m.callback
    FROM mbus.timer_create_many(
        jsonb_build_array(jsonb_build_object(
            'client_id', p_client_id, 'group_key', p_group_key, 'event_key', p_event_key,
            'run_at', p_run_at, 'url', p_url, 'context', p_context, 'retry', p_retry,
            'stop_after_delay_s', p_stop_after_delay_s,
            'originally_run_at', p_originally_run_at)),
        p_now) AS m;
$$;
