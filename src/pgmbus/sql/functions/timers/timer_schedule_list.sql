-- Function: mbus.timer_schedule_list(p_client_id)
--
-- Purpose:  A client's schedules in schedule_key order, in the public JSON shape
--           (mbus.timer_schedule_json).
-- Params:   p_client_id  the owner client's id (bigint)
-- Returns:  SETOF jsonb: one per schedule; no row when the client has none
-- Locks:    none (reads only)
-- Calls:    mbus.timer_schedule_json
-- Tables:   mbus.timer_schedules
CREATE OR REPLACE FUNCTION mbus.timer_schedule_list(p_client_id bigint)
RETURNS SETOF jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT mbus.timer_schedule_json(s) FROM mbus.timer_schedules AS s
    WHERE s.client_id = p_client_id ORDER BY s.schedule_key;
$$;
