-- Function: mbus.retry_event("group", event_id, error, delay, p_now)
--
-- Purpose:  retry_event(group, event_id, error, delay): count a failed attempt at an event; schedule it
--           again after delay (default: the group's retry_backoff doubled per attempt) or, once the
--           group's max_attempts are spent, move it to the dead letters. Returns 'retry' or 'dead'.
-- Params:   "group" text FILL
--           event_id bigint FILL
--           error text DEFAULT NULL FILL
--           delay interval DEFAULT NULL FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  text
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.retry_event("group" text, event_id bigint, error text DEFAULT NULL,
                                 delay interval DEFAULT NULL, p_now timestamptz DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    g     mbus.stream_groups;
    r     mbus.stream_retries;
    v_now timestamptz := coalesce(p_now, now());
BEGIN
    g := mbus._group("group");
    SELECT * INTO r FROM mbus.stream_retries AS sr
    WHERE sr.group_name = g.name AND sr.event_id = retry_event.event_id
    FOR UPDATE;
    IF NOT FOUND THEN
        SELECT g.name, e.id, e.topic, e.key, e.payload, e.headers, e.published_at, 0, v_now,
               NULL
        INTO r
        FROM mbus.events AS e WHERE e.id = retry_event.event_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'MB002',
                MESSAGE = format('event %s does not exist (or is past retention)', event_id);
        END IF;
        INSERT INTO mbus.stream_retries VALUES (r.*);
    END IF;
    r.attempts := r.attempts + 1;
    IF r.attempts >= g.max_attempts THEN
        DELETE FROM mbus.stream_retries AS sr
        WHERE sr.group_name = g.name AND sr.event_id = r.event_id;
        INSERT INTO mbus.stream_dead_letters (group_name, event_id, topic, key, payload,
                                              headers, published_at, attempts, last_error,
                                              dead_at)
        VALUES (g.name, r.event_id, r.topic, r.key, r.payload, r.headers, r.published_at,
                r.attempts, error, v_now)
        ON CONFLICT ON CONSTRAINT stream_dead_letters_pkey DO UPDATE
        SET attempts = excluded.attempts, last_error = excluded.last_error,
            dead_at = excluded.dead_at;
        PERFORM mbus._count('dead_letters');
        RETURN 'dead';
    END IF;
    UPDATE mbus.stream_retries AS sr
    SET attempts = r.attempts, last_error = error,
        next_at = v_now + coalesce(delay, least(g.retry_backoff * power(2, r.attempts - 1),
                                                interval '1 hour'))
    WHERE sr.group_name = g.name AND sr.event_id = r.event_id;
    RETURN 'retry';
END;
$$;
