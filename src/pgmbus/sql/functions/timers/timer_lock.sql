-- Function: mbus.timer_lock(p_client_id, p_group_key, p_event_key)
--
-- Purpose:  Lock a client's callback by its key and return its row: the first step of every
--           user change, so that the change is checked against the callback's current state.
-- Params:   p_client_id  the owner client's id (bigint)
--           p_group_key  the callback's group key (text)
--           p_event_key  the callback's event key (text)
-- Returns:  mbus.timer_callbacks: the locked row; MB002 when there is none
-- Locks:    row lock FOR UPDATE of the callback, held to commit; waits for a transaction that
--           holds it (a dispatcher's claim or record in progress, another change)
-- Calls:    none
-- Tables:   mbus.timer_callbacks
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
