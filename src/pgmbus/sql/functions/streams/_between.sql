-- Function: mbus._between(p_from, p_to)
--
-- Purpose:  The events consumed at position p_to and not at position p_from (mbus._consumed),
--           in no particular order: the range of mbus.read_between, read_listeners and
--           spark_read. The candidates are found by four index conditions on (txid, id), OR-ed
--           (a BitmapOr), which together hold every event of the range once:
--             a. the transactions in p_from's in-progress list (lo's xip), but the one of its
--                position;
--             b. that one (a partial p_from: a cut inside a transaction) from the position on,
--                and up to p_to's position when that is in the same transaction and at or past
--                p_to's lo xmax (so the range ends there);
--             c. from p_from's lo xmax up to p_to's top, below the position's transaction;
--             d. the same above it.
--           So reading a huge transaction in cuts (Spark micro-batches, the live listeners)
--           reads each cut's part of it, not the rest of the transaction every time: O(n) over
--           the transaction instead of O(n^2) (the first cut into it reads it once).
--           The exact rule then applies, after a fast path: a txid at or after p_from's top
--           (started after every transaction p_from had seen) and before p_to's lo xmin (ended
--           before p_to was taken) is in the range without looking further (two comparisons
--           instead of two pg_visible_in_snapshot calls per row: most of a large read).
--           An SQL function without SET: inlined into the caller's query; with constant
--           positions (spark_read's literal cursors) every bound is folded into a constant.
-- Params:   p_from  the range's start (mbus.stream_position)
--           p_to    the range's end (mbus.stream_position)
-- Returns:  SETOF mbus.events
-- Locks:    none (reads only)
-- Calls:    mbus._consumed, mbus._snapshot_xip
-- Tables:   mbus.events
CREATE OR REPLACE FUNCTION mbus._between(p_from mbus.stream_position, p_to mbus.stream_position)
RETURNS SETOF mbus.events
LANGUAGE sql STABLE
AS $$
    SELECT e.*
    FROM mbus.events AS e
    -- c first (most events of a large read), and a, b, d behind a test of p_from alone, which
    -- folds to false with a constant whole p_from: a large read then checks one range per row.
    WHERE ((e.txid >= pg_catalog.pg_snapshot_xmax((p_from).lo)
            -- least() skips a NULL: up to p_to's top when p_from is whole
            AND e.txid < least((p_from).after_txid,
                               pg_catalog.pg_snapshot_xmax(coalesce((p_to).hi, (p_to).lo))))
           OR (pg_catalog.cardinality(mbus._snapshot_xip((p_from).lo)) > 0
               AND e.txid = ANY (pg_catalog.array_remove(mbus._snapshot_xip((p_from).lo),
                                                         (p_from).after_txid)))
           OR ((p_from).after_txid IS NOT NULL
               AND e.txid = (p_from).after_txid
               -- after the position if p_from has consumed it, else from the start
               AND e.id > CASE WHEN pg_catalog.pg_visible_in_snapshot((p_from).after_txid,
                                                                      (p_from).hi)
                               THEN (p_from).after_id
                               ELSE -9223372036854775808 END
               -- on id, not as a row comparison: beside txid = , the B-tree did not stop at one
               AND e.id <= CASE WHEN (p_to).after_txid = (p_from).after_txid
                                     AND (p_to).after_txid
                                         >= pg_catalog.pg_snapshot_xmax((p_to).lo)
                                THEN (p_to).after_id
                                ELSE 9223372036854775807 END)
           OR ((p_from).after_txid IS NOT NULL
               AND e.txid > (p_from).after_txid
               AND e.txid >= pg_catalog.pg_snapshot_xmax((p_from).lo)
               AND e.txid < pg_catalog.pg_snapshot_xmax(coalesce((p_to).hi, (p_to).lo))))
      AND ((e.txid >= pg_catalog.pg_snapshot_xmax(coalesce((p_from).hi, (p_from).lo))
            AND e.txid < pg_catalog.pg_snapshot_xmin((p_to).lo))
           OR (mbus._consumed(e.txid, e.id, p_to) AND NOT mbus._consumed(e.txid, e.id, p_from)))
$$;
