-- Function: mbus.dep_list(value)
--
-- Purpose:  dep_list(value): consume_after as text[] (a JSON array of iids, or one iid); NULL if empty.
-- Params:   value jsonb FILL
-- Returns:  text[]
-- Locks:    FILL
-- Callers:  FILL
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
