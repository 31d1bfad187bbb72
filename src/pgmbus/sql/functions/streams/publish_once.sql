-- Function: mbus.publish_once(topic, idempotency_key, payloads, keys, headers, subscription_id,
--                             delayed_until)
--
-- Purpose:  Publish events of one topic (as mbus.publish_batch) at most once per idempotency
--           key: within streams.idempotency_window (24 hours unless set) a publish of the same
--           topic and key stores nothing and returns the first publish's ids with duplicate =
--           true. The key's row is written in the caller's transaction, before the events: a
--           rolled-back publish leaves no row, and a concurrent publish of the same key waits on
--           it, then returns its ids (or stores, when it rolled back). A row older than the window
--           is taken over by the next publish of its key (mbus.expire_publish_keys deletes them).
-- Params:   topic            the topic of every event (text, 1 to 200 bytes)
--           idempotency_key  the producer's key for this publish (text, 1 to 200 bytes)
--           payloads, keys, headers, subscription_id, delayed_until  as mbus.publish_batch
-- Returns:  TABLE (id bigint, duplicate boolean): the event ids in array order, and whether
--           they are those of an earlier publish of the key; MB006 for a key that is NULL,
--           empty or longer than 200 bytes, or for no payload at all; MB008 (the key is taken) for a retry with another
--           number of events than the publish it repeats; mbus.publish_batch's errors. Nothing
--           is stored on an error.
-- Locks:    the key's row of mbus.stream_publish_keys to the end of the transaction (a second
--           publish of the key waits); those of mbus.publish_batch. Hot path like mbus.publish:
--           no SET search_path (every object schema-qualified, only pg_catalog functions
--           called unqualified), and the window setting read only for a key already stored.
-- Calls:    mbus.publish_batch
-- Tables:   mbus.settings, mbus.stream_publish_keys
CREATE OR REPLACE FUNCTION mbus.publish_once(topic text, idempotency_key text, payloads jsonb[],
                                  keys text[] DEFAULT NULL, headers jsonb[] DEFAULT NULL,
                                  subscription_id bigint DEFAULT NULL,
                                  delayed_until timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint, duplicate boolean)
LANGUAGE plpgsql
AS $$
DECLARE
    v_topic  text := publish_once.topic;
    v_key    text := publish_once.idempotency_key;
    v_window interval;
    v_ids    bigint[];
BEGIN
    IF v_key IS NULL OR v_key = '' OR octet_length(v_key) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('invalid idempotency key %L (1 to 200 bytes)', v_key);
    END IF;
    IF v_topic IS NULL OR v_topic = '' OR octet_length(v_topic) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('invalid topic %L (1 to 200 bytes)', v_topic);
    END IF;
    IF coalesce(cardinality(payloads), 0) = 0 THEN
        -- a retry of nothing could not say it was one: a key names at least one event
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('idempotency key %L publishes no event: give at least one', v_key);
    END IF;
    -- Loops only when the upkeep deleted the row between the INSERT and the SELECT.
    LOOP
        INSERT INTO mbus.stream_publish_keys AS pk (topic, idempotency_key, event_ids,
                                                    published_at)
        VALUES (v_topic, v_key, '{}', now())
        ON CONFLICT ON CONSTRAINT stream_publish_keys_pkey DO NOTHING;
        EXIT WHEN FOUND;
        -- the window is read only when the key is known (a new key never pays for it)
        v_window := coalesce((SELECT st.value #>> '{}' FROM mbus.settings AS st
                              WHERE st.key = 'streams.idempotency_window'),
                             '24 hours')::interval;
        UPDATE mbus.stream_publish_keys AS pk SET event_ids = '{}', published_at = now()
        WHERE pk.topic = v_topic AND pk.idempotency_key = v_key
          AND pk.published_at <= now() - v_window;
        EXIT WHEN FOUND;
        SELECT pk.event_ids INTO v_ids FROM mbus.stream_publish_keys AS pk
        WHERE pk.topic = v_topic AND pk.idempotency_key = v_key;
        IF FOUND THEN
            IF cardinality(v_ids) IS DISTINCT FROM coalesce(cardinality(payloads), 0) THEN
                RAISE EXCEPTION USING ERRCODE = 'MB008',
                    MESSAGE = format('idempotency key %L of topic %L was published with %s '
                                     'events, not %s: a retry must repeat its publish',
                                     v_key, v_topic, cardinality(v_ids),
                                     coalesce(cardinality(payloads), 0));
            END IF;
            RETURN QUERY SELECT u.id, true FROM unnest(v_ids) WITH ORDINALITY AS u (id, n)
                         ORDER BY u.n;
            RETURN;
        END IF;
    END LOOP;
    v_ids := ARRAY(SELECT b.id
                   FROM mbus.publish_batch(v_topic, payloads, keys, headers,
                                           subscription_id => publish_once.subscription_id,
                                           delayed_until => publish_once.delayed_until)
                        WITH ORDINALITY AS b (id, n)
                   ORDER BY b.n);
    UPDATE mbus.stream_publish_keys AS pk SET event_ids = v_ids
    WHERE pk.topic = v_topic AND pk.idempotency_key = v_key;
    RETURN QUERY SELECT u.id, false FROM unnest(v_ids) WITH ORDINALITY AS u (id, n) ORDER BY u.n;
END;
$$;
