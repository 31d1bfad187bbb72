-- Function: mbus.timer_update(p_client_id, p_group_key, p_event_key, p_run_at, ...)
--
-- Purpose:  Change a callback's run_at, originally_run_at, url or context (NULL = keep). Only a
--           pending callback may change, or a cancelled one when p_i_ensure_pending is true,
--           which makes it pending again. New values are checked like a create's
--           (mbus.timer_field_problem): MB006 with the reason, nothing changed. A new run_at
--           without originally_run_at sets both. Any claim is dropped, so the change wins over a
--           delivery not yet started; the change log gets an 'update' row with [old, new] pairs,
--           whose trigger (mbus.timer_notify_change) tells dispatchers to discard their claim.
-- Params:   p_client_id          the owner client's id (bigint)
--           p_group_key          the callback's group key (text)
--           p_event_key          the callback's event key (text)
--           p_run_at             the new run time (NULL = keep)
--           p_originally_run_at  the new original run time (NULL = p_run_at, or keep)
--           p_url                the new URL (NULL = keep)
--           p_context            the new context, a JSON object (NULL = keep; MB005 otherwise)
--           p_i_ensure_pending   also revive a cancelled callback (default false)
--           p_now                the clock (NULL = now()); tests move it
-- Returns:  jsonb: the updated callback (mbus.timer_callback_json); MB002 when there is no such
--           callback, MB008 when it is finished (or cancelled without p_i_ensure_pending),
--           MB006 when a new value is out of its bounds or limits
-- Locks:    row lock of the callback (FOR UPDATE in mbus.timer_lock, then UPDATE), held to
--           commit; waits for a transaction holding it; the change log insert notifies
--           'mbus_timer_changed' at commit
-- Calls:    mbus.given_clock, mbus.timer_callback_json, mbus.timer_field_problem,
--           mbus.timer_limits, mbus.timer_lock
-- Tables:   mbus.timer_callbacks, mbus.timer_change_log
CREATE OR REPLACE FUNCTION mbus.timer_update(p_client_id bigint, p_group_key text,
    p_event_key text, p_run_at timestamptz DEFAULT NULL,
    p_originally_run_at timestamptz DEFAULT NULL, p_url text DEFAULT NULL,
    p_context jsonb DEFAULT NULL, p_i_ensure_pending boolean DEFAULT false,
    p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), now());
    c mbus.timer_callbacks := mbus.timer_lock(p_client_id, p_group_key, p_event_key);
    n mbus.timer_callbacks;
    v_changes jsonb := '{}';
    v_problem text;
BEGIN
    IF NOT (c.status = 'pending' OR (c.status = 'cancelled' AND p_i_ensure_pending)) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('callback %s/%s is %s; only pending callbacks can be updated',
                             p_group_key, p_event_key, c.status),
            HINT = CASE WHEN c.status = 'cancelled'
                        THEN 'pass i_ensure_pending to update it and make it pending again'
                        ELSE 'finished callbacks cannot change' END;
    END IF;
    IF p_context IS NOT NULL AND jsonb_typeof(p_context) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'context must be a JSON object';
    END IF;
    v_problem := mbus.timer_field_problem(mbus.timer_limits(), p_run_at, p_originally_run_at,
                                          p_url, p_context);
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = v_problem;
    END IF;
    UPDATE mbus.timer_callbacks AS t SET
        run_at = coalesce(p_run_at, t.run_at),
        originally_run_at = coalesce(p_originally_run_at, p_run_at, t.originally_run_at),
        url = coalesce(p_url, t.url),
        context = coalesce(p_context, t.context),
        status = 'pending', finished_at = NULL, claimed_by = NULL, claimed_until = NULL,
        updated_at = v_now
    WHERE t.id = c.id
    RETURNING * INTO n;
    IF n.run_at IS DISTINCT FROM c.run_at THEN
        v_changes := v_changes || jsonb_build_object('run_at',
            jsonb_build_array(c.run_at, n.run_at));
    END IF;
    IF n.originally_run_at IS DISTINCT FROM c.originally_run_at THEN
        v_changes := v_changes || jsonb_build_object('originally_run_at',
            jsonb_build_array(c.originally_run_at, n.originally_run_at));
    END IF;
    IF n.url IS DISTINCT FROM c.url THEN
        v_changes := v_changes || jsonb_build_object('url', jsonb_build_array(c.url, n.url));
    END IF;
    IF n.context IS DISTINCT FROM c.context THEN
        v_changes := v_changes || jsonb_build_object('context',
            jsonb_build_array(c.context, n.context));
    END IF;
    INSERT INTO mbus.timer_change_log
        (at, callback_id, client_id, group_key, event_key, action, old_status, new_status, changes)
    VALUES (v_now, c.id, c.client_id, c.group_key, c.event_key, 'update', c.status, n.status,
            v_changes);
    RETURN mbus.timer_callback_json(n);
END;
$$;
