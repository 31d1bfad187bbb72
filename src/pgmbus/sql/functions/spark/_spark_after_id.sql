-- Function: mbus._spark_after_id(p_cursor)
--
-- Purpose:  FILL
-- Params:   p_cursor text FILL
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._spark_after_id(p_cursor text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT ((mbus._parse_position(p_cursor)).pos).after_id $$;
