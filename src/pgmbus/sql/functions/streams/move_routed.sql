-- Function: mbus.move_routed("group", max_events)
--
-- Purpose:  Post the group's next batch to the queues its subscriptions route to
--           (mbus.subscribe_queue) and move the group past it, in the caller's transaction: each
--           event is posted exactly once per route queue, whatever crashes. The batch is
--           read_subscriptions', in its order, once per queue however many subscriptions route
--           there. Data: the payload (as {"value": payload} when not an object); properties:
--           {"topic", "key", "event_id", "subscription_ids", "published_at", "headers"}. A post
--           that fails (a queue without consumers) raises: nothing is posted, the events stay
--           unread.
-- Params:   "group"     the group read (it should be read by move_routed only)
--           max_events  the most events per batch (integer >= 1; 1000 unless given)
-- Returns:  integer: the events read (0 when the group has caught up, or another mover holds
--           it with on_busy 'skip'); read_subscriptions' and mbus.post_batch's errors
-- Locks:    read_subscriptions' (the group's reader lock to the end of the transaction), the
--           posts' (ROW EXCLUSIVE on the queues' delivery tables), commit's row lock
-- Calls:    mbus.commit, mbus.post_batch, mbus.read_subscriptions
-- Tables:   mbus.subscription_queues
CREATE OR REPLACE FUNCTION mbus.move_routed("group" text, max_events integer DEFAULT 1000)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_batch  jsonb;
    v_cursor text;
    v_n      integer;
    r        record;
BEGIN
    SELECT count(*), min(rs.cursor),
           jsonb_agg(to_jsonb(rs) - 'cursor' ORDER BY rs.ordinality)
    INTO v_n, v_cursor, v_batch
    FROM mbus.read_subscriptions("group", max_events) WITH ORDINALITY AS rs;
    IF v_n = 0 THEN
        RETURN 0;
    END IF;
    FOR r IN
        SELECT q.qname,
               array_agg(CASE WHEN jsonb_typeof(b.payload) = 'object' THEN b.payload
                              ELSE jsonb_build_object('value', b.payload) END
                         ORDER BY b.ordinality) AS data,
               array_agg(jsonb_strip_nulls(jsonb_build_object(
                             'topic', b.topic, 'key', b.key, 'event_id', b.id,
                             'subscription_ids', to_jsonb(b.subscription_ids),
                             'published_at', b.published_at, 'headers', b.headers))
                         ORDER BY b.ordinality) AS props
        FROM jsonb_to_recordset(v_batch) AS b (ordinality bigint, id bigint, topic text,
                                               key text, payload jsonb, headers jsonb,
                                               published_at timestamptz,
                                               subscription_ids bigint[])
        JOIN LATERAL (SELECT DISTINCT sq.qname FROM mbus.subscription_queues AS sq
                      WHERE sq.subscription_id = ANY (b.subscription_ids)) AS q ON true
        GROUP BY q.qname
        ORDER BY q.qname
    LOOP
        PERFORM mbus.post_batch(r.qname, r.data, NULL, r.props);
    END LOOP;
    PERFORM mbus.commit("group", v_cursor);
    RETURN v_n;
END;
$$;
