-- Function: mbus.match_subscriptions("group", event_ids)
--
-- Purpose:  For each of these events of the log, the ids of the group's subscriptions it matches
--           (events that match none, and ids not in the log, are left out), e.g. to route events
--           read with read_next or read_between to listeners. An event sent directly to one
--           subscription matches that one only (when it is the group's). A condition that fails
--           on an event does not match it (mbus._match warns and goes on with the others).
-- Params:   "group"    the group's name (not checked: an unknown group matches nothing)
--           event_ids  the events' ids (bigint[])
-- Returns:  TABLE (event_id bigint, subscription_ids bigint[]): ids distinct and ascending
-- Locks:    none (reads only)
-- Calls:    mbus._match
-- Tables:   mbus.events, mbus.subscriptions
CREATE OR REPLACE FUNCTION mbus.match_subscriptions("group" text, event_ids bigint[])
RETURNS TABLE (event_id bigint, subscription_ids bigint[])
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT m.event_id, array_agg(DISTINCT x ORDER BY x)
    FROM mbus._match("group", ARRAY(
             SELECT ROW(e.txid, e.id, e.topic, e.key, e.payload, e.headers,
                        e.published_at)::mbus.stream_row
             FROM mbus.events AS e
             WHERE e.id = ANY (event_ids) AND e.subscription_id IS NULL)) AS m,
         unnest(m.subscription_ids) AS x
    GROUP BY m.event_id
    UNION ALL
    SELECT e.id, ARRAY[e.subscription_id]
    FROM mbus.events AS e
    JOIN mbus.subscriptions AS s ON s.id = e.subscription_id AND s.group_name = "group"
    WHERE e.id = ANY (event_ids) AND e.subscription_id IS NOT NULL;
$$;
