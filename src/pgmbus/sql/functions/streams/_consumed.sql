-- Function: mbus._consumed(p_txid, p_id, p)
--
-- Purpose:  _consumed(txid, id, position): whether the event is consumed at that position.
-- Params:   p_txid xid8 FILL
--           p_id bigint FILL
--           p mbus.stream_position FILL
-- Returns:  boolean
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._consumed(p_txid xid8, p_id bigint, p mbus.stream_position)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT pg_visible_in_snapshot(p_txid, (p).lo)
        OR ((p).hi IS NOT NULL AND pg_visible_in_snapshot(p_txid, (p).hi)
            AND (p_txid, p_id) <= ((p).after_txid, (p).after_id));
$$;
