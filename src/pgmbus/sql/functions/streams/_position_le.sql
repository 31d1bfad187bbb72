-- Function: mbus._position_le(a, b)
--
-- Purpose:  _position_le(a, b): everything consumed at a is consumed at b (conservative: may say no).
-- Params:   a mbus.stream_position FILL
--           b mbus.stream_position FILL
-- Returns:  boolean
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._position_le(a mbus.stream_position, b mbus.stream_position)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE
        WHEN mbus._snap_contains((b).lo, coalesce((a).hi, (a).lo)) THEN true
        WHEN (b).hi IS NULL THEN false
        WHEN (a).hi IS NULL THEN mbus._snap_contains((b).lo, (a).lo)
        ELSE (a).lo::text = (b).lo::text AND (a).hi::text = (b).hi::text
             AND ((a).after_txid, (a).after_id) <= ((b).after_txid, (b).after_id)
    END;
$$;
