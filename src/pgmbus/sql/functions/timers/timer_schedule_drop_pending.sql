-- Function: mbus.timer_schedule_drop_pending(p_schedule_id, p_now)
--
-- Purpose:  Delete a schedule's pending callbacks that no dispatcher has claimed: they were
--           generated ahead of time, never created by the user, and go when the schedule is
--           paused or deleted. Each gets a 'delete' row in the change log with the reason
--           (which, through the log's trigger, also notifies the dispatchers).
-- Params:   p_schedule_id  the schedule's id (bigint)
--           p_now          the time of the change log rows (timestamptz)
-- Returns:  integer: the number of callbacks deleted
-- Locks:    row locks of the deleted callbacks (DELETE; waits for a transaction holding one,
--           e.g. a claim in progress, and then keeps it if it was claimed), held to commit
-- Calls:    none
-- Tables:   mbus.timer_callbacks, mbus.timer_change_log
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
