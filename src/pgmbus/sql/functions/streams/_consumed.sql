-- Function: mbus._consumed(p_txid, p_id, p)
--
-- Purpose:  Whether the event (p_txid, p_id) is consumed at position p: its transaction is visible
--           in lo, or visible in hi and (txid, id) is at or before (after_txid, after_id). A
--           hot-path SQL helper without SET, inlined into the queries that call it (see
--           mbus.publish).
-- Params:   p_txid  the event's transaction id (mbus.events.txid)
--           p_id    the event's id
--           p       the position (mbus.stream_position)
-- Returns:  boolean
-- Locks:    none
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus._consumed(p_txid xid8, p_id bigint, p mbus.stream_position)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT pg_visible_in_snapshot(p_txid, (p).lo)
        OR ((p).hi IS NOT NULL AND pg_visible_in_snapshot(p_txid, (p).hi)
            AND (p_txid, p_id) <= ((p).after_txid, (p).after_id));
$$;
