-- Function: mbus.timer_list(p_client_id, p_group_key, p_status, p_limit, p_after)
--
-- Purpose:  timer_list(client, group_key, status, limit, after): the client's callbacks in id order,
--           optionally of one group and one status, those with id > after (paging), at most limit.
-- Params:   p_client_id bigint FILL
--           p_group_key text DEFAULT NULL FILL
--           p_status text DEFAULT NULL FILL
--           p_limit integer DEFAULT 100 FILL
--           p_after bigint DEFAULT 0 FILL
-- Returns:  SETOF jsonb
-- Locks:    FILL
-- Callers:  FILL
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
