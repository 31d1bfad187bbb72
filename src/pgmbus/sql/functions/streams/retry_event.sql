-- Function: mbus.retry_event("group", event_id, error, delay, p_now)
--
-- Purpose:  Count a failed attempt at an event, so that one bad event does not stop the stream:
--           a consumer that fails on an event hands it here (in the same transaction as its
--           commit) and goes on with the batch; the event comes back through read_retries() after
--           delay (default: the group's retry_backoff doubled per attempt, at most one hour) and,
--           once the group's max_attempts are spent, goes to the dead letters (counter
--           'dead_letters'). The first failure copies the event from the log into
--           mbus.stream_retries; the retry and dead-letter rows keep that copy, so retention never
--           needs to keep a partition for them.
-- Params:   "group"   the group's name
--           event_id  the failed event's id
--           error     what went wrong (text, kept as last_error; NULL = nothing said)
--           delay     when to try again (interval from 0 to 100 years; NULL = the backoff
--                     above, computed in seconds and capped before it can overflow)
--           p_now     the clock (NULL = now()); tests move it
-- Returns:  text: 'retry' (scheduled again) or 'dead' (moved to the dead letters); MB002/MB008
--           for an unknown or expired group, MB002 for an event not in the log (past retention)
--           and not pending retry, MB006 for a delay out of range
-- Locks:    the event's row of mbus.stream_retries FOR UPDATE (or the one it inserts), held to
--           commit; for 'dead', the deleted retry row, the dead letter it inserts or updates and
--           the 'dead_letters' row of mbus.stream_counters; the FK takes FOR KEY SHARE on the
--           group's row
-- Calls:    mbus._count, mbus._group, mbus.given_clock
-- Tables:   mbus.events, mbus.stream_dead_letters, mbus.stream_groups, mbus.stream_retries
CREATE OR REPLACE FUNCTION mbus.retry_event("group" text, event_id bigint, error text DEFAULT NULL,
                                 delay interval DEFAULT NULL, p_now timestamptz DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    g     mbus.stream_groups;
    r     mbus.stream_retries;
    v_now  timestamptz := coalesce(mbus.given_clock(p_now), now());
    v_next timestamptz;
BEGIN
    g := mbus._group("group");
    IF delay IS NOT NULL AND (delay < interval '0' OR delay > interval '100 years') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('delay must be between 0 and 100 years, not %s', delay);
    END IF;
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
    -- the backoff is capped before it is multiplied out: retry_backoff * 2^(attempts - 1)
    -- overflows an interval after about 50 attempts
    v_next := v_now + coalesce(delay, make_interval(secs => least(
        extract(epoch FROM g.retry_backoff)::float8 * power(2::float8, least(r.attempts - 1, 40)),
        3600)));
    UPDATE mbus.stream_retries AS sr
    SET attempts = r.attempts, last_error = error, next_at = v_next
    WHERE sr.group_name = g.name AND sr.event_id = r.event_id;
    RETURN 'retry';
END;
$$;
