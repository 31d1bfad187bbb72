-- Function: mbus.json_shallow_by_size(value)
--
-- Purpose:  Whether a JSON value's stored size alone shows it is not nested too deep for
--           mbus.json_too_deep, so that it need not be walked: under 800 bytes (a value nested
--           more than 100 levels takes at least 8 bytes per level) and not compressed
--           (pg_column_size gives a compressed value's compressed size: a value read from a
--           table column, ~3.4 bytes per level with pglz, so ~235 levels fit in 800 bytes). The
--           one statement of that rule: mbus.json_too_deep tests it before walking, and the
--           paths that skip their checks for a small value (post_<q>'s plain post) test it
--           to decide.
--           Inlined where it is called (LANGUAGE sql, one SELECT, no SET clause): the test costs
--           what it would cost written there; every name is qualified, so a caller's
--           search_path cannot change its meaning.
-- Params:   value  the value (jsonb; NULL is shallow)
-- Returns:  boolean
-- Locks:    none
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.json_shallow_by_size(value jsonb)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT value IS NULL
        OR (pg_catalog.pg_column_size(value) OPERATOR(pg_catalog.<) 800
            AND pg_catalog.pg_column_compression(value) IS NULL);
$$;
