-- Function: mbus._format_position(p, p_slot)
--
-- Purpose:  A position as the text of a cursor (text, since it carries 64-bit xid8 values):
--           '<snap>' (every event visible in <snap> is consumed); '<lo>;<hi>;<after_txid>;
--           <after_id>' (every event visible in <lo>, and of those visible in <hi> but not <lo>,
--           the ones up to (after_txid, after_id) in (txid, id) order: a batch read in pieces,
--           each committed on its own); '<slot>@<position>' (the same, for one slot of a slotted
--           group). mbus._parse_position reads it back. Inlined into its callers.
-- Params:   p       the position (lo, hi, after_txid, after_id; hi NULL for the first form)
--           p_slot  the slot to prefix as '<slot>@' (NULL = no prefix)
-- Returns:  text: the cursor
-- Locks:    none
-- Calls:    none
-- Tables:   none
-- Design:   docs/DESIGN.md#publish-the-hot-path
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
