-- Function: mbus.timer_schedule_delete(p_client_id, p_schedule_key, p_now)
--
-- Purpose:  Delete a schedule and its generated pending callbacks that are not claimed
--           (mbus.timer_schedule_drop_pending). Finished callbacks, and pending ones a
--           dispatcher holds a claim on, stay, detached (their schedule_id becomes NULL by the
--           foreign key).
-- Params:   p_client_id     the owner client's id (bigint)
--           p_schedule_key  the schedule's key (text)
--           p_now           the clock (NULL = now()): the time of the change log rows
-- Returns:  void; MB002 when the client has no such schedule
-- Locks:    row lock FOR UPDATE of the schedule (waits for a scheduler materializing it), then
--           DELETE; those of timer_schedule_drop_pending; row locks of the callbacks detached
--           (ON DELETE SET NULL); all held to commit
-- Calls:    mbus.given_clock, mbus.timer_schedule_drop_pending
-- Tables:   mbus.timer_schedules
CREATE OR REPLACE FUNCTION mbus.timer_schedule_delete(p_client_id bigint, p_schedule_key text,
    p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_id bigint;
BEGIN
    SELECT t.id INTO v_id FROM mbus.timer_schedules AS t
    WHERE t.client_id = p_client_id AND t.schedule_key = p_schedule_key FOR UPDATE;
    IF v_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('no schedule %L', p_schedule_key);
    END IF;
    PERFORM mbus.timer_schedule_drop_pending(v_id, coalesce(mbus.given_clock(p_now), now()));
    DELETE FROM mbus.timer_schedules AS t WHERE t.id = v_id;
END;
$$;
