-- Function: mbus._spark_hi(p_cursor)
--
-- Purpose:  FILL
-- Params:   p_cursor text FILL
-- Returns:  pg_snapshot
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._spark_hi(p_cursor text) RETURNS pg_snapshot
LANGUAGE sql IMMUTABLE AS $$ SELECT ((mbus._parse_position(p_cursor)).pos).hi $$;
