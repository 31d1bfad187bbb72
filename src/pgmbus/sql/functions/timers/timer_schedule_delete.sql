-- Function: mbus.timer_schedule_delete(p_client_id, p_schedule_key, p_now)
--
-- Purpose:  timer_schedule_delete(client, schedule_key, now): delete a schedule and its generated
--           pending callbacks (finished ones stay, detached). MB002 when there is no such schedule.
-- Params:   p_client_id bigint FILL
--           p_schedule_key text FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
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
    PERFORM mbus.timer_schedule_drop_pending(v_id, coalesce(p_now, now()));
    DELETE FROM mbus.timer_schedules AS t WHERE t.id = v_id;
END;
$$;
