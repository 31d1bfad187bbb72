-- Function: mbus.timer_schedule_list(p_client_id)
--
-- Purpose:  timer_schedule_list(client): the client's schedules in key order.
-- Params:   p_client_id bigint FILL
-- Returns:  SETOF jsonb
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_schedule_list(p_client_id bigint)
RETURNS SETOF jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT mbus.timer_schedule_json(s) FROM mbus.timer_schedules AS s
    WHERE s.client_id = p_client_id ORDER BY s.schedule_key;
$$;
