-- Function: mbus.replay_dead_letter("group", event_id)
--
-- Purpose:  Give a dead event a fresh set of attempts, now: its dead letter moves back to
--           mbus.stream_retries with attempts 0 and next_at now (its last_error kept), so
--           read_retries delivers it again.
-- Params:   "group"   the group's name
--           event_id  the dead event's id
-- Returns:  void; MB002 when the event is not a dead letter of the group
-- Locks:    the dead letter's row (DELETE) and the new row of mbus.stream_retries (INSERT; the FK
--           takes FOR KEY SHARE on the group's row), held to commit
-- Calls:    none
-- Tables:   mbus.stream_dead_letters, mbus.stream_retries
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
