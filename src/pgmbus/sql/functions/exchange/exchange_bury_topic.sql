-- Function: mbus.exchange_bury_topic(route, reason, attempts)
--
-- Purpose:  Send the next event of a topic route that the destination keeps refusing (the one
--           mbus.exchange_take_topic would send first: a replayed dead letter, else the log's
--           next event of the group 'xt_<route>') to the group's dead letters, with the reason,
--           and move past it, so the route goes on. Nothing is lost: the dead letter keeps a
--           copy of the event; mbus.replay_dead_letter('xt_<route>', event id) gives it back
--           to the route, which sends it before the log's next events.
-- Params:   route     the topic route's name (text)
--           reason    why (text: the destination's error)
--           attempts  the refusals so far (integer >= 1)
-- Returns:  bigint: the buried event's id (NULL when the route has nothing to send); MB002 for
--           an unknown route, MB006 for attempts < 1
-- Locks:    those of mbus.read_next and mbus.commit on the group, the due row of
--           mbus.stream_retries it deletes, the dead letter it inserts and the 'dead_letters'
--           row of mbus.stream_counters, held to commit
-- Calls:    mbus._count, mbus.commit, mbus.read_next
-- Tables:   mbus.exchange_topic_route, mbus.stream_dead_letters, mbus.stream_retries
CREATE OR REPLACE FUNCTION mbus.exchange_bury_topic(route text, reason text, attempts integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    r mbus.exchange_topic_route;
    d mbus.stream_dead_letters;
    v_cursor text;
BEGIN
    IF attempts IS NULL OR attempts < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('attempts must be >= 1, not %s', attempts);
    END IF;
    SELECT * INTO r FROM mbus.exchange_topic_route AS x WHERE x.name = route;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('route %L does not exist', route);
    END IF;
    WITH due AS (
        SELECT sr.event_id FROM mbus.stream_retries AS sr
        WHERE sr.group_name = r.grp AND sr.next_at <= now()
        ORDER BY sr.next_at, sr.event_id
        LIMIT 1
        FOR UPDATE
    )
    DELETE FROM mbus.stream_retries AS sr
    USING due
    WHERE sr.group_name = r.grp AND sr.event_id = due.event_id
    RETURNING sr.group_name, sr.event_id, sr.topic, sr.key, sr.payload, sr.headers,
              sr.published_at, exchange_bury_topic.attempts, exchange_bury_topic.reason, now()
    INTO d;
    IF d.event_id IS NULL THEN
        SELECT n.cursor, r.grp, n.id, n.topic, n.key, n.payload, n.headers, n.published_at,
               exchange_bury_topic.attempts, exchange_bury_topic.reason, now()
        INTO v_cursor, d.group_name, d.event_id, d.topic, d.key, d.payload, d.headers,
             d.published_at, d.attempts, d.last_error, d.dead_at
        FROM mbus.read_next(r.grp, 1) AS n;
        IF v_cursor IS NULL THEN
            RETURN NULL;
        END IF;
        PERFORM mbus.commit(r.grp, v_cursor);
    END IF;
    INSERT INTO mbus.stream_dead_letters (group_name, event_id, topic, key, payload, headers,
                                          published_at, attempts, last_error, dead_at)
    VALUES (d.group_name, d.event_id, d.topic, d.key, d.payload, d.headers, d.published_at,
            d.attempts, d.last_error, d.dead_at)
    ON CONFLICT ON CONSTRAINT stream_dead_letters_pkey DO UPDATE
    SET attempts = excluded.attempts, last_error = excluded.last_error,
        dead_at = excluded.dead_at;
    PERFORM mbus._count('dead_letters');
    RETURN d.event_id;
END;
$$;
