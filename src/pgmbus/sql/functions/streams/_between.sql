-- Function: mbus._between(p_from, p_to)
--
-- Purpose:  The events consumed at position p_to and not at position p_from (mbus._consumed), in
--           no particular order: the range of mbus.read_between, read_listeners and spark_read.
--           Reading a huge transaction in cuts reads each cut's part of it, not the rest of the
--           transaction every time. Inlined into the caller's query; with constant positions
--           every bound is folded into a constant.
-- Params:   p_from  the range's start (mbus.stream_position)
--           p_to    the range's end (mbus.stream_position)
-- Returns:  SETOF mbus.events
-- Locks:    none (reads only)
-- Calls:    mbus._consumed, mbus._snapshot_xip
-- Tables:   mbus.events
-- Design:   docs/DESIGN.md#_batch-and-_between-index-ranges-over-txid-id
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
