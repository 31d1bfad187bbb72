-- Function: mbus.timer_history(p_client_id, p_group_key, p_event_key)
--
-- Purpose:  A callback's history: the callback, its change log rows (create, update, cancel,
--           delete, status, retry, in log order) and its HTTP calls (by attempt and call). The
--           log is found by key and outlives a deleted callback: then "callback" is null and
--           "attempts" empty, and MB002 is raised only when there is no trace at all. A key
--           deleted and created again shows the changes of both. Attempts and calls count from
--           1, as the receiver saw them (pgmbus-attempt, pgmbus-call): mbus.timer_attempts.call
--           is the fast retry's index, from 0, so a call here is that index + 1.
-- Params:   p_client_id  the owner client's id (bigint)
--           p_group_key  the callback's group key (text)
--           p_event_key  the callback's event key (text)
-- Returns:  jsonb {"callback": object or null, "changes": [...], "attempts": [...]}; MB002 when
--           neither the callback nor a log row exists
-- Locks:    none (reads only)
-- Calls:    mbus.timer_callback_json
-- Tables:   mbus.timer_attempts, mbus.timer_callbacks, mbus.timer_change_log
CREATE OR REPLACE FUNCTION mbus.timer_history(p_client_id bigint, p_group_key text, p_event_key text)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_changes jsonb;
    v_callback jsonb;
    v_attempts jsonb;
BEGIN
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'at', l.at, 'callback_id', l.callback_id, 'action', l.action,
               'old_status', l.old_status, 'new_status', l.new_status, 'changes', l.changes)
               ORDER BY l.id), '[]')
    INTO v_changes
    FROM mbus.timer_change_log AS l
    WHERE l.client_id = p_client_id AND l.group_key = p_group_key AND l.event_key = p_event_key;
    SELECT mbus.timer_callback_json(c),
           (SELECT coalesce(jsonb_agg(jsonb_build_object(
                'attempt', a.attempt, 'call', a.call + 1, 'dispatcher', a.dispatcher,
                'started_at', a.started_at, 'finished_at', a.finished_at, 'outcome', a.outcome,
                'status_code', a.status_code, 'error', a.error)
                ORDER BY a.attempt, a.call), '[]')
            FROM mbus.timer_attempts AS a WHERE a.callback_id = c.id)
    INTO v_callback, v_attempts
    FROM mbus.timer_callbacks AS c
    WHERE c.client_id = p_client_id AND c.group_key = p_group_key AND c.event_key = p_event_key;
    IF v_callback IS NULL AND v_changes = '[]' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('no callback %s/%s', p_group_key, p_event_key);
    END IF;
    RETURN jsonb_build_object('callback', v_callback, 'changes', v_changes,
                              'attempts', coalesce(v_attempts, '[]'));
END;
$$;
