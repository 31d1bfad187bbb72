-- Function: mbus.group_cursor("group", slot)
--
-- Purpose:  The group's (slot's) committed position as a cursor, for read_between and the Spark
--           reader. The '<slot>@' prefix is added only when a slot is named and the group has
--           several.
-- Params:   "group"  the group's name
--           slot     the slot (NULL = the only slot of an unslotted group)
-- Returns:  text: the cursor; MB002/MB008 for an unknown or expired group, MB006 for a bad slot,
--           MB009 when the log is not this cluster's
-- Locks:    none (reads only)
-- Calls:    mbus._check_log, mbus._format_position, mbus._group, mbus._slot_of
-- Tables:   mbus.stream_cursors, mbus.stream_groups
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
