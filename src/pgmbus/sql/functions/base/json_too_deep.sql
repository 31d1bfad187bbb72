-- Function: mbus.json_too_deep(value)
--
-- Purpose:  Whether a JSON value nests containers more than 100 levels deep (the root is level
--           1; a container at path level 100 is the 101st: scalars inside the 100th are fine, as
--           pgmbus.json_depth counts in Python). Such a value is refused where messages and
--           events enter (MB005): PostgreSQL stores it, but clients cannot read it back
--           (Python's json stops near 1,000 levels, the HTTP API's serializer near 250), and a
--           claim has committed by the time its rows are read, so one deep message would be
--           lost, or block every reader of its queue or group. Only a value whose size does not
--           rule it out (mbus.json_shallow_by_size: 800 bytes or more, or compressed) is walked.
--           Inlined where it is called (LANGUAGE sql, one SELECT, no SET clause, every name
--           qualified): a small value costs its callers the size test only, with no function
--           call and no planning per call (a SET clause made it a call planned each time).
-- Params:   value  the value (jsonb; NULL is not too deep)
-- Returns:  boolean
-- Locks:    none
-- Calls:    mbus.json_shallow_by_size
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.json_too_deep(value jsonb)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT NOT mbus.json_shallow_by_size(value)
       AND pg_catalog.jsonb_path_exists(value, 'strict $.**{100} ? (@.type() == "object"
                                                                    || @.type() == "array")');
$$;
