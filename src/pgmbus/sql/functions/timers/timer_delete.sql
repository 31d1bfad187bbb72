-- Function: mbus.timer_delete(p_client_id, p_group_key, p_event_key, p_force, p_now)
--
-- Purpose:  Delete a callback with its attempts (its change log stays, so mbus.timer_history
--           still shows it, with a 'delete' row). As the CallMeBack design rules, a pending
--           callback due in less than one minute (or overdue) is refused unless p_force: it
--           may be being called; cancel it instead. The 'delete' log row's trigger
--           (mbus.timer_notify_change) tells the dispatchers to discard a claim they hold.
-- Params:   p_client_id  the owner client's id (bigint)
--           p_group_key  the callback's group key (text)
--           p_event_key  the callback's event key (text)
--           p_force      delete even a pending callback due within a minute (default false)
--           p_now        the clock (NULL = now()); tests move it
-- Returns:  void; MB002 when there is no such callback, MB008 when refused
-- Locks:    row lock of the callback (FOR UPDATE in mbus.timer_lock, then DELETE) and of its
--           attempts, held to commit; waits for a transaction holding it; the change log insert
--           notifies 'mbus_timer_changed' at commit
-- Calls:    mbus.given_clock, mbus.timer_lock
-- Tables:   mbus.timer_callbacks, mbus.timer_change_log
CREATE OR REPLACE FUNCTION mbus.timer_delete(p_client_id bigint, p_group_key text, p_event_key text,
    p_force boolean DEFAULT false, p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), now());
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
