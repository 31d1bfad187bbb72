-- Function: mbus.publish_batch(topic, payloads, keys, headers)
--
-- Purpose:  publish_batch(topic, payloads, keys, headers): append one event per payload (keys and
--           headers, when given, are parallel arrays). Returns the ids in array order.
-- Params:   topic text FILL
--           payloads jsonb[] FILL
--           keys text[] DEFAULT NULL FILL
--           headers jsonb[] DEFAULT NULL FILL
-- Returns:  SETOF bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.publish_batch(topic text, payloads jsonb[], keys text[] DEFAULT NULL,
                                   headers jsonb[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM mbus._check_log();
    PERFORM pg_notify('mbus_events', '');
    IF topic IS NULL OR topic = '' OR octet_length(topic) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('invalid topic %L (1 to 200 bytes)', topic);
    END IF;
    IF (keys IS NOT NULL AND cardinality(keys) <> cardinality(payloads))
       OR (headers IS NOT NULL AND cardinality(headers) <> cardinality(payloads)) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'keys and headers must have one element per payload';
    END IF;
    IF array_position(payloads, NULL) IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'payloads must not contain null';
    END IF;
    RETURN QUERY
    INSERT INTO mbus.events (topic, key, payload, headers)
    SELECT publish_batch.topic, k.key, p.payload, h.headers
    FROM unnest(payloads) WITH ORDINALITY AS p (payload, n)
    LEFT JOIN unnest(keys) WITH ORDINALITY AS k (key, n) ON k.n = p.n
    LEFT JOIN unnest(headers) WITH ORDINALITY AS h (headers, n) ON h.n = p.n
    ORDER BY p.n
    RETURNING events.id;
END;
$$;
