-- Function: mbus.timer_history(p_client_id, p_group_key, p_event_key)
--
-- Purpose:  timer_history(client, group_key, event_key): {"callback", "changes": [...], "attempts": [...]}
--           The change log outlives a deleted callback; then "callback" is null and MB002 is raised only
--           when there is no trace at all.
-- Params:   p_client_id bigint FILL
--           p_group_key text FILL
--           p_event_key text FILL
-- Returns:  jsonb
-- Locks:    FILL
-- Callers:  FILL
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
                'attempt', a.attempt, 'call', a.call, 'dispatcher', a.dispatcher,
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
