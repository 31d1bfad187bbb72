-- Function: mbus._slot_of(g, p_slot)
--
-- Purpose:  Validate a slot argument against the group's slot count: NULL means slot 0 and is
--           only allowed when the group has one slot.
-- Params:   g       the group's row (mbus.stream_groups)
--           p_slot  the slot asked for (integer; NULL = the only slot)
-- Returns:  integer: the slot; MB006 when NULL for a slotted group or out of 0 .. slots - 1
-- Locks:    none
-- Calls:    none
-- Tables:   mbus.stream_groups
CREATE OR REPLACE FUNCTION mbus._slot_of(g mbus.stream_groups, p_slot integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
BEGIN
    IF p_slot IS NULL THEN
        IF g.slots > 1 THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('consumer group %L has %s slots: name the slot', g.name,
                                 g.slots);
        END IF;
        RETURN 0;
    END IF;
    IF p_slot < 0 OR p_slot >= g.slots THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('slot %s out of range: group %L has slots 0..%s', p_slot, g.name,
                             g.slots - 1);
    END IF;
    RETURN p_slot;
END;
$$;
