-- Function: mbus.read_retries("group", max_events, lease, p_now)
--
-- Purpose:  read_retries(group, max_events, lease): claim events whose retry is due. Each is hidden for
--           lease (so a crashed handler's claim comes back); finish it with ack_retry() or
--           retry_event().
-- Params:   "group" text FILL
--           max_events integer DEFAULT 100 FILL
--           lease interval DEFAULT '1 minute' FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  TABLE (id bigint, topic text, key text, payload jsonb, headers jsonb, published_at timestamptz, attempts integer, last_error text)
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.read_retries("group" text, max_events integer DEFAULT 100,
                                  lease interval DEFAULT '1 minute',
                                  p_now timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz, attempts integer, last_error text)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(p_now, now());
BEGIN
    PERFORM mbus._group("group");
    RETURN QUERY
    WITH due AS (
        SELECT r.group_name, r.event_id FROM mbus.stream_retries AS r
        WHERE r.group_name = "group" AND r.next_at <= v_now
        ORDER BY r.next_at, r.event_id
        LIMIT max_events
        FOR UPDATE SKIP LOCKED
    )
    UPDATE mbus.stream_retries AS r SET next_at = v_now + lease
    FROM due
    WHERE r.group_name = due.group_name AND r.event_id = due.event_id
    RETURNING r.event_id, r.topic, r.key, r.payload, r.headers, r.published_at, r.attempts,
              r.last_error;
END;
$$;
