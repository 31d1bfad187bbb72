-- Function: mbus.timer_delete(p_client_id, p_group_key, p_event_key, p_force, p_now)
--
-- Purpose:  timer_delete(client, group_key, event_key, force, now): delete a callback. Refused (MB008)
--           for a pending callback due in less than one minute (or overdue) unless force (the seed).
-- Params:   p_client_id bigint FILL
--           p_group_key text FILL
--           p_event_key text FILL
--           p_force boolean DEFAULT false FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_delete(p_client_id bigint, p_group_key text, p_event_key text,
    p_force boolean DEFAULT false, p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    c mbus.timer_callbacks := mbus.timer_lock(p_client_id, p_group_key, p_event_key);
BEGIN
    IF NOT p_force AND c.status = 'pending' AND c.run_at < v_now + interval '1 minute' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('callback %s/%s is pending and due within one minute',
                             p_group_key, p_event_key),
            HINT = 'cancel it, or delete with force';
    END IF;
    DELETE FROM mbus.timer_callbacks AS t WHERE t.id = c.id;
    INSERT INTO mbus.timer_change_log
        (at, callback_id, client_id, group_key, event_key, action, old_status, changes)
    VALUES (v_now, c.id, c.client_id, c.group_key, c.event_key, 'delete', c.status,
            jsonb_build_object('force', p_force));
END;
$$;
