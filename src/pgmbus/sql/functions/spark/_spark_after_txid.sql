-- Function: mbus._spark_after_txid(p_cursor)
--
-- Purpose:  FILL
-- Params:   p_cursor text FILL
-- Returns:  xid8
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._spark_after_txid(p_cursor text) RETURNS xid8
LANGUAGE sql IMMUTABLE AS $$ SELECT ((mbus._parse_position(p_cursor)).pos).after_txid $$;
