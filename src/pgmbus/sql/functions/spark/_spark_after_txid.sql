-- Function: mbus._spark_after_txid(p_cursor)
--
-- Purpose:  The transaction id of the last consumed event of a partial cursor
--           ('<lo>;<hi>;<txid>;<id>'). A cursor part as a constant for spark_read, like
--           mbus._spark_lo (IMMUTABLE, inlined, folded).
-- Params:   p_cursor  a stream cursor (text)
-- Returns:  xid8; NULL for a plain cursor; MB006 for a malformed cursor
-- Locks:    none (computes only)
-- Callers:  mbus.spark_read
CREATE OR REPLACE FUNCTION mbus._spark_after_txid(p_cursor text) RETURNS xid8
LANGUAGE sql IMMUTABLE AS $$ SELECT ((mbus._parse_position(p_cursor)).pos).after_txid $$;
