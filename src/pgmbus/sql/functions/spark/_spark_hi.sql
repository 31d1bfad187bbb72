-- Function: mbus._spark_hi(p_cursor)
--
-- Purpose:  The target snapshot of a partial cursor ('<lo>;<hi>;<txid>;<id>'): of the events
--           visible in it but not in lo, those up to (txid, id) are consumed. A cursor part as a
--           constant for spark_read, like mbus._spark_lo (IMMUTABLE, inlined, folded).
-- Params:   p_cursor  a stream cursor (text)
-- Returns:  pg_snapshot; NULL for a plain (not partial) cursor; MB006 for a malformed cursor
-- Locks:    none (computes only)
-- Callers:  mbus.spark_read; mbus._spark_top
CREATE OR REPLACE FUNCTION mbus._spark_hi(p_cursor text) RETURNS pg_snapshot
LANGUAGE sql IMMUTABLE AS $$ SELECT ((mbus._parse_position(p_cursor)).pos).hi $$;
