-- Function: mbus._batch(p_ended, p_after_txid, p_after_id, p_from, p_to, p_hi, p_topics, p_slot,
--           p_nslots, p_limit, p_group)
--
-- Purpose:  The next events of the batch from a position lo to a snapshot hi, in (txid, id)
--           order, after (after_txid, after_id), at most limit rows: the xip transactions of lo
--           that hi sees ended, the rest of after_txid's own events when it is one of them, and
--           the transactions from xmax(lo) up to xmax(hi) that hi sees. An event sent directly to
--           one subscription is read only by the group that owns it; with p_group NULL every
--           event of the topics counts, directed ones too (mbus.spark_next_cursor's cut). Inlined
--           into read_next's query.
-- Params:   p_ended       the ids of lo's xip transactions that hi sees ended (xid8[])
--           p_after_txid  the transaction id of the last event consumed inside this batch
--                         ('0' when none)
--           p_after_id    the id of that event (-1 when none)
--           p_from        where the second scan starts: the greater of xmax(lo) and after_txid
--           p_to          where it ends (exclusive): xmax(hi)
--           p_hi          the batch's upper snapshot; only transactions it sees are read
--           p_topics      the group's topics (text[]; NULL = all)
--           p_slot        the slot read (integer)
--           p_nslots      the group's slot count (1 = no key filter)
--           p_limit       the most rows returned
--           p_group       the reading group (directed events of other groups are left out;
--                         NULL: none is left out)
-- Returns:  SETOF mbus.stream_row (txid, id, topic, key, payload, headers, published_at), in
--           (txid, id) order; no row when the batch is done
-- Locks:    none (reads only)
-- Calls:    mbus.key_slot
-- Tables:   mbus.events, mbus.subscriptions
-- Design:   docs/DESIGN.md#_batch-and-_between-index-ranges-over-txid-id
CREATE OR REPLACE FUNCTION mbus._batch(p_ended xid8[], p_after_txid xid8, p_after_id bigint, p_from xid8,
                            p_to xid8, p_hi pg_snapshot, p_topics text[], p_slot integer,
                            p_nslots integer, p_limit integer, p_group text)
RETURNS SETOF mbus.stream_row
LANGUAGE sql STABLE
AS $$
    -- The filters are repeated in each branch: applied once above the union, they kept the
    -- planner from merging the three ordered scans (it sorted their whole output instead).
    SELECT b.* FROM (
        (SELECT e.txid, e.id, e.topic, e.key, e.payload, e.headers, e.published_at
         FROM mbus.events AS e
         WHERE e.txid = ANY (p_ended) AND e.txid > p_after_txid
           AND (p_topics IS NULL OR e.topic = ANY (p_topics))
           AND (p_nslots = 1 OR mbus.key_slot(e.key, e.id, p_nslots) = p_slot)
           AND (e.subscription_id IS NULL OR p_group IS NULL
                OR EXISTS (SELECT 1 FROM mbus.subscriptions AS s
                           WHERE s.id = e.subscription_id AND s.group_name = p_group))
         ORDER BY e.txid, e.id
         LIMIT p_limit)
        UNION ALL
        (SELECT e.txid, e.id, e.topic, e.key, e.payload, e.headers, e.published_at
         FROM mbus.events AS e
         WHERE p_after_txid = ANY (p_ended)
           AND e.txid = p_after_txid AND e.id > p_after_id
           AND (p_topics IS NULL OR e.topic = ANY (p_topics))
           AND (p_nslots = 1 OR mbus.key_slot(e.key, e.id, p_nslots) = p_slot)
           AND (e.subscription_id IS NULL OR p_group IS NULL
                OR EXISTS (SELECT 1 FROM mbus.subscriptions AS s
                           WHERE s.id = e.subscription_id AND s.group_name = p_group))
         ORDER BY e.txid, e.id
         LIMIT p_limit)
        UNION ALL
        (SELECT e.txid, e.id, e.topic, e.key, e.payload, e.headers, e.published_at
         FROM mbus.events AS e
         -- one lower bound, the row comparison: the scan starts there. (With a second
         -- one, txid >= p_from, the index may start at either; started at the position
         -- inside an ended transaction, it walked the rest of that transaction.)
         WHERE (e.txid, e.id) > (CASE WHEN p_after_txid >= p_from THEN p_after_txid
                                      ELSE p_from END,
                                 CASE WHEN p_after_txid >= p_from THEN p_after_id
                                      ELSE -9223372036854775808 END)
           AND e.txid < p_to
           AND pg_visible_in_snapshot(e.txid, p_hi)
           AND (p_topics IS NULL OR e.topic = ANY (p_topics))
           AND (p_nslots = 1 OR mbus.key_slot(e.key, e.id, p_nslots) = p_slot)
           AND (e.subscription_id IS NULL OR p_group IS NULL
                OR EXISTS (SELECT 1 FROM mbus.subscriptions AS s
                           WHERE s.id = e.subscription_id AND s.group_name = p_group))
         ORDER BY e.txid, e.id
         LIMIT p_limit)
    ) AS b
    ORDER BY b.txid, b.id
    LIMIT p_limit;
$$;
