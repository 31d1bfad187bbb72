-- Function: mbus.ack_retry("group", event_id)
--
-- Purpose:  A retried event was handled: forget its pending retry.
-- Params:   "group"   the group's name
--           event_id  the event's id
-- Returns:  void; MB002 when the event has no pending retry in the group
-- Locks:    the event's row of mbus.stream_retries (DELETE), held to commit; waits for a
--           transaction that holds it (a claim in progress)
-- Calls:    none
-- Tables:   mbus.stream_retries
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
