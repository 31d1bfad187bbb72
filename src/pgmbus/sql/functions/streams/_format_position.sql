-- Function: mbus._format_position(p, p_slot)
--
-- Purpose:  A position as the text of a cursor. Cursors are text because they carry 64-bit xid8
--           values:
--             '<snap>'                             every event visible in <snap> is consumed;
--             '<lo>;<hi>;<after_txid>;<after_id>'  every event visible in <lo> is consumed, and of
--                                                  the events visible in <hi> but not in <lo>,
--                                                  those up to (after_txid, after_id) in
--                                                  (txid, id) order;
--             '<slot>@<position>'                  the same, for one slot of a slotted group.
--           The second form lets a batch larger than max_events be read in pieces, each one
--           committed on its own. mbus._parse_position reads this text back. A hot-path SQL
--           helper without SET (see mbus.publish), inlined into its callers: every part is
--           immutable (explicit ::text casts joined by ||, skipping NULLs as concat_ws did;
--           concat_ws is only stable, and a body less than immutable kept it from being inlined,
--           so it was planned again on every call).
-- Params:   p       the position (lo, hi, after_txid, after_id; hi NULL for the first form)
--           p_slot  the slot to prefix as '<slot>@' (NULL = no prefix)
-- Returns:  text: the cursor
-- Locks:    none
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus._format_position(p mbus.stream_position, p_slot integer DEFAULT NULL)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN p_slot IS NULL THEN '' ELSE p_slot::text || '@' END
        || CASE WHEN (p).hi IS NULL THEN (p).lo::text
                ELSE coalesce((p).lo::text || ';', '') || (p).hi::text
                     || coalesce(';' || (p).after_txid::text, '')
                     || coalesce(';' || (p).after_id::text, '') END;
$$;
