-- Function: mbus.timer_cancel(p_client_id, p_group_key, p_event_key, p_now)
--
-- Purpose:  timer_cancel(client, group_key, event_key, now): cancel a pending callback (else MB008).
-- Params:   p_client_id bigint FILL
--           p_group_key text FILL
--           p_event_key text FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  jsonb
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_cancel(p_client_id bigint, p_group_key text, p_event_key text,
    p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    c mbus.timer_callbacks := mbus.timer_lock(p_client_id, p_group_key, p_event_key);
    n mbus.timer_callbacks;
BEGIN
    IF c.status <> 'pending' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('callback %s/%s is %s; only pending callbacks can be cancelled',
                             p_group_key, p_event_key, c.status);
    END IF;
    UPDATE mbus.timer_callbacks AS t
    SET status = 'cancelled', finished_at = v_now, updated_at = v_now,
        claimed_by = NULL, claimed_until = NULL
    WHERE t.id = c.id
    RETURNING * INTO n;
    INSERT INTO mbus.timer_change_log
        (at, callback_id, client_id, group_key, event_key, action, old_status, new_status)
    VALUES (v_now, c.id, c.client_id, c.group_key, c.event_key, 'cancel', 'pending', 'cancelled');
    RETURN mbus.timer_callback_json(n);
END;
$$;
