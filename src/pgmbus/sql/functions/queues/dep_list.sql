-- Function: mbus.dep_list(value)
--
-- Purpose:  headers.consume_after as text[]: a JSON array of iids (deduplicated, sorted), or one
--           iid as a JSON string; NULL for JSON null, NULL or an empty array. Anything else raises
--           MB005.
-- Params:   value  headers -> 'consume_after' (jsonb)
-- Returns:  text[]: the iids, or NULL
-- Locks:    none
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.dep_list(value jsonb)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
BEGIN
    IF value IS NULL OR jsonb_typeof(value) = 'null' THEN
        RETURN NULL;
    ELSIF jsonb_typeof(value) = 'string' THEN
        RETURN ARRAY[value #>> '{}'];
    ELSIF jsonb_typeof(value) = 'array'
          AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(value) AS e(v)
                          WHERE jsonb_typeof(e.v) <> 'string') THEN
        RETURN nullif(ARRAY(SELECT DISTINCT e.v FROM jsonb_array_elements_text(value) AS e(v)
                            ORDER BY e.v), '{}');
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'MB005',
        MESSAGE = 'headers.consume_after must be an iid or a JSON array of iids';
END;
$$;
