-- Function: mbus.timer_cancel(p_client_id, p_group_key, p_event_key, p_now)
--
-- Purpose:  Cancel a pending callback: status 'cancelled', finished now, and any claim of a
--           dispatcher dropped, so the change wins over a delivery not yet started. The change
--           log gets a 'cancel' row, whose trigger (mbus.timer_notify_change) tells the
--           dispatchers to discard a claim they hold in memory. A cancelled callback can be
--           made pending again by mbus.timer_update with p_i_ensure_pending.
-- Params:   p_client_id  the owner client's id (bigint)
--           p_group_key  the callback's group key (text)
--           p_event_key  the callback's event key (text)
--           p_now        the clock (NULL = now()); tests move it
-- Returns:  jsonb: the cancelled callback (mbus.timer_callback_json); MB002 when there is no
--           such callback, MB008 when it is not pending
-- Locks:    row lock of the callback (FOR UPDATE in mbus.timer_lock, then UPDATE), held to
--           commit; waits for a transaction holding it (a claim or record in progress); the
--           change log insert notifies 'mbus_timer_changed' at commit
-- Calls:    mbus.given_clock, mbus.timer_callback_json, mbus.timer_lock
-- Tables:   mbus.timer_callbacks, mbus.timer_change_log
CREATE OR REPLACE FUNCTION mbus.timer_cancel(p_client_id bigint, p_group_key text, p_event_key text,
    p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), now());
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
