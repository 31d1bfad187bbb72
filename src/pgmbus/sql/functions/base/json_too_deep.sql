-- Function: mbus.json_too_deep(value)
--
-- Purpose:  Whether a JSON value nests containers more than 100 levels deep (the root is level
--           1; a container at path level 100 is the 101st: scalars inside the 100th are fine, as
--           pgmbus.json_depth counts in Python). Such a value is refused where messages and
--           events enter (MB005). Only a value whose size does not rule it out
--           (mbus.json_shallow_by_size: 800 bytes or more, or compressed) is walked. Inlined
--           where it is called.
-- Params:   value  the value (jsonb; NULL is not too deep)
-- Returns:  boolean
-- Locks:    none
-- Calls:    mbus.json_shallow_by_size
-- Tables:   none
-- Design:   docs/DESIGN.md#inlined-helpers-given_clock-json_too_deep-json_shallow_by_size
CREATE OR REPLACE FUNCTION mbus.json_too_deep(value jsonb)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT NOT mbus.json_shallow_by_size(value)
       AND pg_catalog.jsonb_path_exists(value, 'strict $.**{100} ? (@.type() == "object"
                                                                    || @.type() == "array")');
$$;
