-- Function: mbus.timer_lock(p_client_id, p_group_key, p_event_key)
--
-- Purpose:  timer_lock(client, group_key, event_key): lock and return the callback row (MB002 if none).
-- Params:   p_client_id bigint FILL
--           p_group_key text FILL
--           p_event_key text FILL
-- Returns:  mbus.timer_callbacks
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_lock(p_client_id bigint, p_group_key text, p_event_key text)
RETURNS mbus.timer_callbacks
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    c mbus.timer_callbacks;
BEGIN
    SELECT * INTO c FROM mbus.timer_callbacks AS t
    WHERE t.client_id = p_client_id AND t.group_key = p_group_key AND t.event_key = p_event_key
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('no callback %s/%s', p_group_key, p_event_key);
    END IF;
    RETURN c;
END;
$$;
