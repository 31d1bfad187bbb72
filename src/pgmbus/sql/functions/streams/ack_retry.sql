-- Function: mbus.ack_retry("group", event_id)
--
-- Purpose:  ack_retry(group, event_id): a retried event was handled; forget it.
-- Params:   "group" text FILL
--           event_id bigint FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.ack_retry("group" text, event_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    DELETE FROM mbus.stream_retries AS r
    WHERE r.group_name = "group" AND r.event_id = ack_retry.event_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('event %s has no pending retry in group %L', event_id, "group");
    END IF;
END;
$$;
