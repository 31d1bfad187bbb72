-- Function: mbus.timer_list(p_client_id, p_group_key, p_status, p_limit, p_after)
--
-- Purpose:  A page of a client's callbacks in id order, optionally of one group and one status:
--           those with id > p_after, at most p_limit (the next page starts after the last id).
-- Params:   p_client_id  the owner client's id (bigint)
--           p_group_key  only this group (NULL = all)
--           p_status     only this status: pending, notified, failed, cancelled or rejected
--                        (NULL = all; MB006 for another)
--           p_limit      the page size, 1 to 1000 (default 100; MB006 outside)
--           p_after      the last id of the previous page (default 0 = from the start)
-- Returns:  SETOF jsonb: the callbacks (mbus.timer_callback_json); no row when none is left
-- Locks:    none (reads only)
-- Calls:    mbus.timer_callback_json
-- Tables:   mbus.timer_callbacks
CREATE OR REPLACE FUNCTION mbus.timer_list(p_client_id bigint, p_group_key text DEFAULT NULL,
    p_status text DEFAULT NULL, p_limit integer DEFAULT 100, p_after bigint DEFAULT 0)
RETURNS SETOF jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
BEGIN
    IF p_limit NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'limit must be from 1 to 1000';
    END IF;
    IF p_status IS NOT NULL
       AND p_status NOT IN ('pending', 'notified', 'failed', 'cancelled', 'rejected') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('unknown status %L', p_status);
    END IF;
    RETURN QUERY
    SELECT mbus.timer_callback_json(c) FROM mbus.timer_callbacks AS c
    WHERE c.client_id = p_client_id
      AND (p_group_key IS NULL OR c.group_key = p_group_key)
      AND (p_status IS NULL OR c.status = p_status)
      AND c.id > coalesce(p_after, 0)
    ORDER BY c.id
    LIMIT p_limit;
END;
$$;
