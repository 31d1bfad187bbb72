-- Function: mbus._slot_of(g, p_slot)
--
-- Purpose:  _slot_of(group, slot): validate the slot argument against the group's slot count.
-- Params:   g mbus.stream_groups FILL
--           p_slot integer FILL
-- Returns:  integer
-- Locks:    FILL
-- Callers:  FILL
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
