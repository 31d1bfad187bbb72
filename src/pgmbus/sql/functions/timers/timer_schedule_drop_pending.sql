-- Function: mbus.timer_schedule_drop_pending(p_schedule_id, p_now)
--
-- Purpose:  timer_schedule_drop_pending(schedule_id, now): delete the schedule's pending callbacks that
--           are not yet claimed (they were generated ahead of time, never created by the user).
-- Params:   p_schedule_id bigint FILL
--           p_now timestamptz FILL
-- Returns:  integer
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_schedule_drop_pending(p_schedule_id bigint, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_count integer;
BEGIN
    WITH gone AS (
        DELETE FROM mbus.timer_callbacks AS c
        WHERE c.schedule_id = p_schedule_id AND c.status = 'pending' AND c.claimed_by IS NULL
        RETURNING c.*
    ), logged AS (
        INSERT INTO mbus.timer_change_log
            (at, callback_id, client_id, group_key, event_key, action, old_status, changes)
        SELECT p_now, g.id, g.client_id, g.group_key, g.event_key, 'delete', g.status,
               '{"reason": "schedule paused or deleted"}'
        FROM gone AS g
    )
    SELECT count(*) INTO v_count FROM gone;
    RETURN v_count;
END;
$$;
