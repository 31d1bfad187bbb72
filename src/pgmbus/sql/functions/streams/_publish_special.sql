-- Function: mbus._publish_special(p_topic, p_payloads, p_keys, p_headers, p_subscription,
--                                  p_delayed_until)
--
-- Purpose:  The rarer half of publish and publish_batch (arguments already checked): events sent
--           directly to one subscription (a row of mbus.events with subscription_id set, shown
--           only to the group that owns it and handed to that subscription alone), and
--           future-dated events (delayed_until after the transaction's start): kept in
--           mbus.stream_scheduled with an id reserved now, appended by mbus.release_scheduled
--           once due; never skipped, never read twice. A delayed_until in the past publishes at
--           once.
-- Params:   p_topic         the topic (checked by the caller)
--           p_payloads      the bodies (jsonb[], checked by the caller)
--           p_keys          the keys (text[] parallel to p_payloads, or NULL)
--           p_headers       the headers (jsonb[] parallel to p_payloads, or NULL)
--           p_subscription  the subscription the events are for (NULL = all that match)
--           p_delayed_until    when readers may see the events (NULL = at commit)
-- Returns:  SETOF bigint: the event ids in array order; MB002 for a subscription that does not
--           exist, MB006 for a delayed_until that is not finite or more than the setting
--           streams.max_delay (30 days unless set) ahead of the transaction's start (nothing is
--           published then: a waiting event keeps its partition from retention, so how long
--           one can wait is bounded)
-- Locks:    FOR KEY SHARE on the subscription's row (it cannot be removed before this commits);
--           ROW EXCLUSIVE on mbus.events or mbus.stream_scheduled
-- Calls:    mbus.get_setting, mbus.notify
-- Tables:   mbus.events, mbus.stream_scheduled, mbus.subscriptions
-- Design:   docs/DESIGN.md#_publish_special-and-release_scheduled-future-dated-events
CREATE OR REPLACE FUNCTION mbus._publish_special(p_topic text, p_payloads jsonb[], p_keys text[],
                                       p_headers jsonb[], p_subscription bigint,
                                       p_delayed_until timestamptz)
RETURNS SETOF bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_max_delay interval;
BEGIN
    IF p_delayed_until IS NOT NULL AND NOT isfinite(p_delayed_until) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('delayed_until must be a finite time, not %s', p_delayed_until);
    END IF;
    IF p_delayed_until > now() THEN
        -- a waiting event holds the partition its reserved id belongs to (maintain keeps it):
        -- how far ahead is bounded, or one event could keep a partition for centuries
        v_max_delay := (mbus.get_setting('streams.max_delay', '"30 days"') #>> '{}')::interval;
        IF p_delayed_until > now() + v_max_delay THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('delayed_until %s is more than streams.max_delay (%s) ahead of '
                                 'now; set streams.max_delay to publish further ahead',
                                 p_delayed_until, v_max_delay);
        END IF;
    END IF;
    IF p_subscription IS NOT NULL THEN
        PERFORM 1 FROM mbus.subscriptions AS s WHERE s.id = p_subscription FOR KEY SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'MB002',
                MESSAGE = format('subscription %s does not exist', p_subscription);
        END IF;
    END IF;
    IF p_delayed_until IS NULL OR p_delayed_until <= now() THEN
        PERFORM mbus.notify();  -- only while a reader waits (mbus.await_events)
        RETURN QUERY
        INSERT INTO mbus.events (topic, key, payload, headers, subscription_id)
        SELECT p_topic, k.key, p.payload, h.headers, p_subscription
        FROM unnest(p_payloads) WITH ORDINALITY AS p (payload, n)
        LEFT JOIN unnest(p_keys) WITH ORDINALITY AS k (key, n) ON k.n = p.n
        LEFT JOIN unnest(p_headers) WITH ORDINALITY AS h (headers, n) ON h.n = p.n
        ORDER BY p.n
        RETURNING events.id;
        RETURN;
    END IF;
    RETURN QUERY
    INSERT INTO mbus.stream_scheduled (id, delayed_until, topic, key, payload, headers,
                                       subscription_id)
    SELECT nextval('mbus.event_seq'), p_delayed_until, x.topic, x.key, x.payload, x.headers,
           p_subscription
    FROM (SELECT p_topic AS topic, k.key, p.payload, h.headers, p.n
          FROM unnest(p_payloads) WITH ORDINALITY AS p (payload, n)
          LEFT JOIN unnest(p_keys) WITH ORDINALITY AS k (key, n) ON k.n = p.n
          LEFT JOIN unnest(p_headers) WITH ORDINALITY AS h (headers, n) ON h.n = p.n
          ORDER BY p.n) AS x
    ORDER BY x.n
    RETURNING stream_scheduled.id;
END;
$$;
