-- Function: mbus._spark_cut_scan(p_ended, p_after_txid, p_after_id, p_from, p_to, p_hi, p_topics,
--           p_limit)
--
-- Purpose:  The first p_limit events after a position, in (txid, id) order, that
--           mbus.spark_next_cursor counts: every event of p_topics (directed ones too), of the
--           transactions hi sees that lo did not. The shape of mbus._batch (which filters for
--           one group): three index range scans on (txid, id), merged in order:
--             1. `ended`: lo's xip transactions that hi sees, after after_txid, each from its
--                first event;
--             2. the rest of after_txid's own events when it is one of those: the scan starts
--                at the position, not at the transaction's first event (a huge transaction cut
--                into micro-batches is read once, not once per batch from its start);
--             3. the transactions from `from` up to `to` (exclusive) that hi sees, starting at
--                the position when it is among them.
--           An SQL function without SET: inlined into the caller's query.
-- Params:   p_ended       lo's xip transactions that hi sees ended (xid8[])
--           p_after_txid  the transaction of the position ('0' when the cursor is whole)
--           p_after_id    the event of the position (-1 when the cursor is whole)
--           p_from        xmax(lo): where the third scan starts (unless at the position)
--           p_to          xmax(hi): where it ends (exclusive)
--           p_hi          the snapshot the batch goes to
--           p_topics      count only events of these topics (text[]; NULL = all)
--           p_limit       the most rows returned
-- Returns:  TABLE (txid xid8, id bigint, published_at timestamptz), in (txid, id) order
-- Locks:    none (reads only)
-- Callers:  mbus.spark_next_cursor (the cut, and whether events of other topics passed)
CREATE OR REPLACE FUNCTION mbus._spark_cut_scan(p_ended xid8[], p_after_txid xid8,
                                                p_after_id bigint, p_from xid8, p_to xid8,
                                                p_hi pg_snapshot, p_topics text[],
                                                p_limit bigint)
RETURNS TABLE (txid xid8, id bigint, published_at timestamptz)
LANGUAGE sql STABLE
AS $$
    -- The topic filter is repeated in each branch (as in mbus._batch: above the union, the
    -- planner sorted the whole output instead of merging the ordered scans).
    SELECT b.* FROM (
        (SELECT e.txid, e.id, e.published_at
         FROM mbus.events AS e
         WHERE e.txid = ANY (p_ended) AND e.txid > p_after_txid
           AND (p_topics IS NULL OR e.topic = ANY (p_topics))
         ORDER BY e.txid, e.id
         LIMIT p_limit)
        UNION ALL
        (SELECT e.txid, e.id, e.published_at
         FROM mbus.events AS e
         WHERE p_after_txid = ANY (p_ended)
           AND e.txid = p_after_txid AND e.id > p_after_id
           AND (p_topics IS NULL OR e.topic = ANY (p_topics))
         ORDER BY e.txid, e.id
         LIMIT p_limit)
        UNION ALL
        (SELECT e.txid, e.id, e.published_at
         FROM mbus.events AS e
         WHERE (e.txid, e.id) > (CASE WHEN p_after_txid >= p_from THEN p_after_txid
                                      ELSE p_from END,
                                 CASE WHEN p_after_txid >= p_from THEN p_after_id
                                      ELSE -9223372036854775808 END)
           AND e.txid < p_to
           AND pg_catalog.pg_visible_in_snapshot(e.txid, p_hi)
           AND (p_topics IS NULL OR e.topic = ANY (p_topics))
         ORDER BY e.txid, e.id
         LIMIT p_limit)
    ) AS b
    ORDER BY b.txid, b.id
    LIMIT p_limit;
$$;
