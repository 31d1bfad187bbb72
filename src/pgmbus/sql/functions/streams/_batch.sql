-- Function: mbus._batch(p_ended, p_after_txid, p_after_id, p_from, p_to, p_hi, p_topics, p_slot, p_nslots, p_limit)
--
-- Purpose:  _batch(ended, after_txid, after_id, from, to, hi, topics, slot, nslots, limit): the next
--           events of the batch from a position lo to a snapshot hi, in (txid, id) order, after
--           (after_txid, after_id). A transaction not visible in lo is either in lo's xip list or at or
--           after lo's xmax, so the batch is two index range scans on (txid, id): `ended`, the xip
--           transactions of lo that hi sees ended, and the transactions from `from` (xmax(lo)) up to
--           `to` (xmax(hi)) that hi sees. A long transaction makes the first list one entry longer; it
--           never widens the second scan. An SQL function without SET, so the planner inlines it into
--           read_next's query (no intermediate copies of the rows).
-- Params:   p_ended xid8[] FILL
--           p_after_txid xid8 FILL
--           p_after_id bigint FILL
--           p_from xid8 FILL
--           p_to xid8 FILL
--           p_hi pg_snapshot FILL
--           p_topics text[] FILL
--           p_slot integer FILL
--           p_nslots integer FILL
--           p_limit integer FILL
-- Returns:  SETOF mbus.stream_row
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._batch(p_ended xid8[], p_after_txid xid8, p_after_id bigint, p_from xid8,
                            p_to xid8, p_hi pg_snapshot, p_topics text[], p_slot integer,
                            p_nslots integer, p_limit integer)
RETURNS SETOF mbus.stream_row
LANGUAGE sql STABLE
AS $$
    SELECT b.* FROM (
        (SELECT e.txid, e.id, e.topic, e.key, e.payload, e.headers, e.published_at
         FROM mbus.events AS e
         WHERE e.txid = ANY (p_ended)
           AND (e.txid, e.id) > (p_after_txid, p_after_id)
           AND (p_topics IS NULL OR e.topic = ANY (p_topics))
           AND (p_nslots = 1 OR mbus.key_slot(e.key, e.id, p_nslots) = p_slot)
         ORDER BY e.txid, e.id
         LIMIT p_limit)
        UNION ALL
        (SELECT e.txid, e.id, e.topic, e.key, e.payload, e.headers, e.published_at
         FROM mbus.events AS e
         WHERE e.txid >= p_from AND e.txid < p_to
           AND (e.txid, e.id) > (p_after_txid, p_after_id)
           AND pg_visible_in_snapshot(e.txid, p_hi)
           AND (p_topics IS NULL OR e.topic = ANY (p_topics))
           AND (p_nslots = 1 OR mbus.key_slot(e.key, e.id, p_nslots) = p_slot)
         ORDER BY e.txid, e.id
         LIMIT p_limit)
    ) AS b
    ORDER BY b.txid, b.id
    LIMIT p_limit;
$$;
