-- Function: mbus._spark_after_id(p_cursor)
--
-- Purpose:  The event id of the last consumed event of a partial cursor
--           ('<lo>;<hi>;<txid>;<id>'). A cursor part as a constant for spark_read, like
--           mbus._spark_lo (IMMUTABLE, inlined, folded).
-- Params:   p_cursor  a stream cursor (text)
-- Returns:  bigint; NULL for a plain cursor; MB006 for a malformed cursor
-- Locks:    none (computes only)
-- Callers:  mbus.spark_read
CREATE OR REPLACE FUNCTION mbus._spark_after_id(p_cursor text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT ((mbus._parse_position(p_cursor)).pos).after_id $$;
