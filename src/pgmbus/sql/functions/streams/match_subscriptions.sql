-- Function: mbus.match_subscriptions("group", event_ids)
--
-- Purpose:  match_subscriptions(group, event ids): for each of these events, the ids of the group's
--           subscriptions it matches (events that match none are left out).
-- Params:   "group" text FILL
--           event_ids bigint[] FILL
-- Returns:  TABLE (event_id bigint, subscription_ids bigint[])
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.match_subscriptions("group" text, event_ids bigint[])
RETURNS TABLE (event_id bigint, subscription_ids bigint[])
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT m.event_id, array_agg(DISTINCT x ORDER BY x)
    FROM mbus._match("group", ARRAY(
             SELECT ROW(e.txid, e.id, e.topic, e.key, e.payload, e.headers,
                        e.published_at)::mbus.stream_row
             FROM mbus.events AS e WHERE e.id = ANY (event_ids))) AS m,
         unnest(m.subscription_ids) AS x
    GROUP BY m.event_id;
$$;
