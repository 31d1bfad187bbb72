-- Function: mbus.timer_get(p_client_id, p_group_key, p_event_key)
--
-- Purpose:  timer_get(client, group_key, event_key): the callback's JSON; MB002 when there is none.
-- Params:   p_client_id bigint FILL
--           p_group_key text FILL
--           p_event_key text FILL
-- Returns:  jsonb
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_get(p_client_id bigint, p_group_key text, p_event_key text)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v jsonb;
BEGIN
    SELECT mbus.timer_callback_json(c) INTO v FROM mbus.timer_callbacks AS c
    WHERE c.client_id = p_client_id AND c.group_key = p_group_key AND c.event_key = p_event_key;
    IF v IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('no callback %s/%s', p_group_key, p_event_key);
    END IF;
    RETURN v;
END;
$$;
