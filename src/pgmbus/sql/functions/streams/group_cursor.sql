-- Function: mbus.group_cursor("group", slot)
--
-- Purpose:  group_cursor(group, slot): the group's committed position (text).
-- Params:   "group" text FILL
--           slot integer DEFAULT NULL FILL
-- Returns:  text
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.group_cursor("group" text, slot integer DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    g      mbus.stream_groups;
    c      mbus.stream_cursors;
    v_slot integer;
BEGIN
    PERFORM mbus._check_log();
    g := mbus._group("group");
    v_slot := mbus._slot_of(g, slot);
    SELECT * INTO c FROM mbus.stream_cursors AS sc
    WHERE sc.group_name = g.name AND sc.slot = v_slot;
    RETURN mbus._format_position(ROW(c.lo, c.hi, c.after_txid, c.after_id),
                                 CASE WHEN slot IS NOT NULL AND g.slots > 1 THEN v_slot END);
END;
$$;
