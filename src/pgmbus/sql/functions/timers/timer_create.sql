-- Function: mbus.timer_create(p_client_id, p_group_key, p_event_key, p_run_at, p_url, ...)
--
-- Purpose:  Create one callback, idempotent on (client, group_key, event_key): an existing
--           callback is returned unchanged with created = false. A one-item call of
--           mbus.timer_create_many, which does the checks and the work.
-- Params:   p_client_id           the owner client's id (bigint)
--           p_group_key           the group key (text; no '/' or control characters)
--           p_event_key           the event key within the group (text; same rules)
--           p_run_at              when to call the URL (timestamptz)
--           p_url                 the http(s) URL to POST to (text)
--           p_context             the JSON object sent with the call (default '{}')
--           p_retry               the retry policy (jsonb; NULL = defaults, see
--                                 mbus.timer_retry_policy)
--           p_stop_after_delay_s  give up retrying this long after originally_run_at
--                                 (NULL = 86400)
--           p_originally_run_at   the run time reported to the receiver (NULL = p_run_at)
--           p_now                 the clock (NULL = now()); tests move it
-- Returns:  one row (created boolean, callback jsonb): created is false when the key existed;
--           callback is mbus.timer_callback_json of the (new or existing) callback
-- Locks:    those of mbus.timer_create_many
-- Calls:    mbus.timer_create_many
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.timer_create(
    p_client_id bigint, p_group_key text, p_event_key text, p_run_at timestamptz, p_url text,
    p_context jsonb DEFAULT '{}', p_retry jsonb DEFAULT NULL,
    p_stop_after_delay_s double precision DEFAULT NULL,
    p_originally_run_at timestamptz DEFAULT NULL, p_now timestamptz DEFAULT NULL,
    OUT created boolean, OUT callback jsonb)
LANGUAGE plpgsql
SET search_path = pg_catalog
-- PL/pgSQL, not SQL: with SET an SQL function is planned on every call.
AS $$
BEGIN
    SELECT m.created, m.callback INTO created, callback
    FROM mbus.timer_create_many(
        jsonb_build_array(jsonb_build_object(
            'client_id', p_client_id, 'group_key', p_group_key, 'event_key', p_event_key,
            'run_at', p_run_at, 'url', p_url, 'context', p_context, 'retry', p_retry,
            'stop_after_delay_s', p_stop_after_delay_s,
            'originally_run_at', p_originally_run_at)),
        p_now) AS m;
END;
$$;
