-- Function: mbus._spark_lo(p_cursor)
--
-- Purpose:  The snapshot of a cursor at which every visible event is consumed: the whole
--           position of a plain cursor, the start of a partial one ('<lo>;<hi>;<txid>;<id>').
--           One of the _spark_* parts that give spark_read a cursor's parts as scalars. They
--           are IMMUTABLE LANGUAGE sql functions without a SET clause, so that with a literal
--           cursor the planner folds them into constants and spark_read's txid conditions
--           become index conditions on events_txid_id. A slot prefix ('<slot>@') is ignored.
-- Params:   p_cursor  a stream cursor (text)
-- Returns:  pg_snapshot; MB006 for a malformed or NULL cursor (mbus._parse_position)
-- Locks:    none (computes only)
-- Callers:  mbus.spark_read; mbus._spark_xip, _spark_top, _spark_bottom
CREATE OR REPLACE FUNCTION mbus._spark_lo(p_cursor text) RETURNS pg_snapshot
LANGUAGE sql IMMUTABLE AS $$ SELECT ((mbus._parse_position(p_cursor)).pos).lo $$;
