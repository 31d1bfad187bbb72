-- Function: mbus._position_le(a, b)
--
-- Purpose:  Whether everything consumed at position a is consumed at position b. Conservative: it
--           may say no when the answer is yes (two positions inside different batches are only
--           compared when they share lo and hi), never the reverse. A hot-path SQL helper without
--           SET (see mbus.publish).
-- Params:   a  the earlier position (mbus.stream_position)
--           b  the later position
-- Returns:  boolean
-- Locks:    none
-- Calls:    mbus._snap_contains
-- Tables:   none
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
