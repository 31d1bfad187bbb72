-- Function: mbus.json_shallow_by_size(value)
--
-- Purpose:  Whether a JSON value's stored size alone shows it is not nested too deep for
--           mbus.json_too_deep, so that it need not be walked: under 800 bytes and not
--           compressed. The one statement of that rule: mbus.json_too_deep tests it before
--           walking, and the paths that skip their checks for a small value (post_<q>'s plain
--           post) test it to decide. Inlined where it is called.
-- Params:   value  the value (jsonb; NULL is shallow)
-- Returns:  boolean
-- Locks:    none
-- Calls:    none
-- Tables:   none
-- Design:   docs/DESIGN.md#inlined-helpers-given_clock-json_too_deep-json_shallow_by_size
CREATE OR REPLACE FUNCTION mbus.json_shallow_by_size(value jsonb)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT value IS NULL
        OR (pg_catalog.pg_column_size(value) OPERATOR(pg_catalog.<) 800
            AND pg_catalog.pg_column_compression(value) IS NULL);
$$;
