-- Function: mbus.replay_dead_letter("group", event_id)
--
-- Purpose:  replay_dead_letter(group, event_id): give a dead event a fresh set of attempts, now.
-- Params:   "group" text FILL
--           event_id bigint FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.replay_dead_letter("group" text, event_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    WITH d AS (
        DELETE FROM mbus.stream_dead_letters AS d
        WHERE d.group_name = "group" AND d.event_id = replay_dead_letter.event_id
        RETURNING d.*
    )
    INSERT INTO mbus.stream_retries (group_name, event_id, topic, key, payload, headers,
                                     published_at, attempts, next_at, last_error)
    SELECT d.group_name, d.event_id, d.topic, d.key, d.payload, d.headers, d.published_at, 0,
           now(), d.last_error
    FROM d;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('event %s is not a dead letter of group %L', event_id, "group");
    END IF;
END;
$$;
