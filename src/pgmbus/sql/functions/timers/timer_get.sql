-- Function: mbus.timer_get(p_client_id, p_group_key, p_event_key)
--
-- Purpose:  A client's callback by its key, in the public JSON shape (mbus.timer_callback_json).
-- Params:   p_client_id  the owner client's id (bigint)
--           p_group_key  the callback's group key (text)
--           p_event_key  the callback's event key (text)
-- Returns:  jsonb: the callback; MB002 when the client has no such callback
-- Locks:    none (reads only)
-- Calls:    mbus.timer_callback_json
-- Tables:   mbus.timer_callbacks
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
