-- Function: mbus.publish_batch(topic, payloads, keys, headers, subscription_id, delayed_until,
--                              idempotency_key)
--
-- Purpose:  Append one event per payload on one topic in the caller's transaction, in one INSERT;
--           keys and headers, when given, are arrays parallel to payloads. Notifies listeners of
--           'mbus_events' (delivered at commit) while a reader waits, as mbus.publish. Hot path: no SET (see mbus.publish).
-- Params:   topic     the topic of every event (text, 1 to 200 bytes)
--           payloads  the events' bodies (jsonb[], not NULL, no NULL element; '{}' = nothing)
--           keys      the events' keys (text[] of the same length; NULL = no keys)
--           headers   the events' headers (jsonb[] of the same length; NULL = none)
--           subscription_id  send every event to this one subscription only (NULL = to all
--                     that match; see mbus._publish_special)
--           delayed_until  readers see the events from this time on (NULL or past = at commit)
--           idempotency_key  publish the batch at most once per key and topic within the
--                     setting streams.idempotency_window (NULL = no key; see
--                     mbus.publish_once): a publish of a remembered key stores nothing and
--                     returns the first's ids
-- Returns:  SETOF bigint: the event ids in array order; MB006 for a bad topic, arrays of
--           different lengths or of more than one dimension, MB005 for a NULL payloads array, a
--           NULL payload, headers that are not JSON objects (NULL elements mean no headers) or an
--           element nested more than 100 levels deep (mbus.json_too_deep), MB009 when the log is
--           not this cluster's; mbus._publish_special's and mbus.publish_once's errors
-- Locks:    none beyond the INSERT into mbus.events (ROW EXCLUSIVE)
-- Calls:    mbus._check_log, mbus._publish_special, mbus.json_too_deep, mbus.publish_once
-- Tables:   mbus.events, mbus.stream_waiter
CREATE OR REPLACE FUNCTION mbus.publish_batch(topic text, payloads jsonb[],
                                   keys text[] DEFAULT NULL, headers jsonb[] DEFAULT NULL,
                                   subscription_id bigint DEFAULT NULL,
                                   delayed_until timestamptz DEFAULT NULL,
                                   idempotency_key text DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql
AS $$
BEGIN
    IF current_setting('mbus.streams_log_ok', true) IS DISTINCT FROM 'yes' THEN
        PERFORM mbus._check_log();
    END IF;
    IF topic IS NULL OR topic = '' OR octet_length(topic) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('invalid topic %L (1 to 200 bytes)', topic);
    END IF;
    IF array_ndims(payloads) > 1 OR array_ndims(keys) > 1 OR array_ndims(headers) > 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'payloads, keys and headers must be one-dimensional arrays';
    END IF;
    IF (keys IS NOT NULL AND cardinality(keys) <> cardinality(payloads))
       OR (headers IS NOT NULL AND cardinality(headers) <> cardinality(payloads)) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'keys and headers must have one element per payload';
    END IF;
    IF payloads IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'payloads must not be null';
    END IF;
    IF array_position(payloads, NULL) IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'payloads must not contain null';
    END IF;
    IF headers IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(headers) AS h (x)
                                       WHERE h.x IS NOT NULL AND jsonb_typeof(h.x) <> 'object')
    THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'headers must be JSON objects';
    END IF;
    -- too deep for readers to read back (mbus.json_too_deep: inlined, walks big elements only)
    IF EXISTS (SELECT 1 FROM unnest(payloads) AS p (x) WHERE mbus.json_too_deep(p.x))
       OR EXISTS (SELECT 1 FROM unnest(headers) AS h (x) WHERE mbus.json_too_deep(h.x)) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005',
            MESSAGE = 'a payload or headers element is nested more than 100 levels deep';
    END IF;
    IF publish_batch.idempotency_key IS NOT NULL THEN
        RETURN QUERY
        SELECT o.id FROM mbus.publish_once(publish_batch.topic, publish_batch.idempotency_key,
                                           payloads, keys, headers,
                                           publish_batch.subscription_id,
                                           publish_batch.delayed_until) AS o;
        RETURN;
    END IF;
    IF publish_batch.subscription_id IS NOT NULL OR publish_batch.delayed_until IS NOT NULL THEN
        RETURN QUERY
        SELECT mbus._publish_special(publish_batch.topic, payloads, keys, headers,
                                     publish_batch.subscription_id, publish_batch.delayed_until);
        RETURN;
    END IF;
    -- unnest of several arrays zips them in array order (a NULL array gives NULLs): no join,
    -- no sort; the ids follow the rows' order
    RETURN QUERY
    INSERT INTO mbus.events (topic, key, payload, headers)
    SELECT publish_batch.topic, u.key, u.payload, u.headers
    FROM unnest(payloads, keys, headers) AS u (payload, key, headers)
    RETURNING events.id;
    -- after the INSERT, once per transaction, only while a reader waits (see mbus.publish)
    IF current_setting('mbus.streams_notified', true) IS DISTINCT FROM 'yes' THEN
        PERFORM set_config('mbus.streams_notified', 'yes', true);
        IF EXISTS (SELECT 1 FROM mbus.stream_waiter) THEN
            PERFORM pg_notify('mbus_events', '');
        END IF;
    END IF;
END;
$$;
