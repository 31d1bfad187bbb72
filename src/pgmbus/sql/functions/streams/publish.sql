-- Function: mbus.publish(topic, payload, key, headers, subscription_id, delayed_until,
--                        idempotency_key)
--
-- Purpose:  Append one event to the log in the caller's transaction; it is readable exactly
--           when that transaction commits, never when it rolls back. The event stores the
--           top-level transaction id (pg_current_xact_id(), never xmin), so transactions that
--           commit out of id order are never skipped. Listeners of 'mbus_events' are notified at
--           most once per transaction, and only while a reader waits (mbus.await_events). No SET
--           search_path, as the rest of the hot path: every object is schema-qualified.
-- Params:   topic    the topic (text, 1 to 200 bytes)
--           payload  the event's body (jsonb, not NULL)
--           key      the event's key (text; NULL = none): slots and capture use it for ordering
--           headers  metadata (a jsonb object; NULL = none)
--           subscription_id  send the event to this one subscription only (NULL = to all that
--                    match; see mbus._publish_special)
--           delayed_until  readers see the event from this time on (NULL or past = at commit)
--           idempotency_key  publish at most once per key and topic within the setting
--                    streams.idempotency_window (NULL = no key; see mbus.publish_once): a
--                    publish of a remembered key stores nothing and returns the first's id
-- Returns:  bigint: the event id; MB006 for a bad topic, MB005 for a NULL payload or headers that
--           are not an object, MB005 for a payload or headers nested more than 100 levels deep
--           (mbus.json_too_deep), MB009 when the log is not this cluster's; mbus._publish_special's
--           errors (an unknown subscription, a delayed_until that is not finite or too far ahead),
--           mbus.publish_once's (a bad idempotency key)
-- Locks:    none beyond the INSERT into the current partition of mbus.events (ROW EXCLUSIVE);
--           reads mbus.stream_waiter
-- Calls:    mbus._check_log, mbus._publish_special, mbus.json_shallow_by_size, mbus.json_too_deep,
--           mbus.publish_once
-- Tables:   mbus.events, mbus.stream_waiter
-- Design:   docs/DESIGN.md#publish-the-hot-path
CREATE OR REPLACE FUNCTION mbus.publish(topic text, payload jsonb, key text DEFAULT NULL,
                             headers jsonb DEFAULT NULL, subscription_id bigint DEFAULT NULL,
                             delayed_until timestamptz DEFAULT NULL,
                             idempotency_key text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_id bigint;
BEGIN
    -- one test on the common path; the checks one by one only when something is off
    IF current_setting('mbus.streams_log_ok', true) IS DISTINCT FROM 'yes'
       OR topic IS NULL OR topic = '' OR octet_length(topic) > 200 OR payload IS NULL
       OR (headers IS NOT NULL AND jsonb_typeof(headers) <> 'object')
       OR NOT mbus.json_shallow_by_size(payload) OR NOT mbus.json_shallow_by_size(headers)
    THEN
        PERFORM mbus._check_log();
        IF topic IS NULL OR topic = '' OR octet_length(topic) > 200 THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('invalid topic %L (1 to 200 bytes)', topic);
        END IF;
        IF payload IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'payload must not be null';
        END IF;
        IF headers IS NOT NULL AND jsonb_typeof(headers) <> 'object' THEN
            RAISE EXCEPTION USING ERRCODE = 'MB005',
                MESSAGE = format('headers must be a JSON object, not %s', jsonb_typeof(headers));
        END IF;
        IF mbus.json_too_deep(payload) THEN
            RAISE EXCEPTION USING ERRCODE = 'MB005',
                MESSAGE = 'payload is nested more than 100 levels deep';
        END IF;
        IF mbus.json_too_deep(headers) THEN
            RAISE EXCEPTION USING ERRCODE = 'MB005',
                MESSAGE = 'headers is nested more than 100 levels deep';
        END IF;
    END IF;
    IF publish.idempotency_key IS NOT NULL THEN
        RETURN (SELECT o.id FROM mbus.publish_once(publish.topic, publish.idempotency_key,
                                                   ARRAY[publish.payload], ARRAY[publish.key],
                                                   ARRAY[publish.headers],
                                                   publish.subscription_id,
                                                   publish.delayed_until) AS o);
    END IF;
    IF publish.subscription_id IS NOT NULL OR publish.delayed_until IS NOT NULL THEN
        RETURN mbus._publish_special(publish.topic, ARRAY[publish.payload], ARRAY[publish.key],
                                     ARRAY[publish.headers], publish.subscription_id,
                                     publish.delayed_until);
    END IF;
    INSERT INTO mbus.events (topic, key, payload, headers)
    VALUES (publish.topic, publish.key, publish.payload, publish.headers)
    RETURNING events.id INTO v_id;
    -- Wake-up: once per transaction (the flag is transaction-local and undone with a rolled-back
    -- savepoint), after the INSERT, and a notification only while a reader waits. A reader that
    -- registers after this check sees this transaction in flight (its ROW EXCLUSIVE lock on
    -- mbus.events, mbus._writers_in_flight) and polls until it has ended.
    IF current_setting('mbus.streams_notified', true) IS DISTINCT FROM 'yes' THEN
        PERFORM set_config('mbus.streams_notified', 'yes', true);
        IF EXISTS (SELECT 1 FROM mbus.stream_waiter) THEN
            PERFORM pg_notify('mbus_events', '');
        END IF;
    END IF;
    RETURN v_id;
END;
$$;
