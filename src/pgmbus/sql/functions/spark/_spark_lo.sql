-- Function: mbus._spark_lo(p_cursor)
--
-- Purpose:  Parts of a cursor as scalars (_spark_lo: the snapshot everything before is consumed at,
--           _spark_hi/_spark_after_*: the partial-position part or NULL, _spark_xip: lo's in-progress
--           list, _spark_top: the xmax of the cursor's newest snapshot). IMMUTABLE, so that with a
--           literal cursor the planner folds them into constants and spark_read's txid conditions
--           become index conditions on events_txid_id.
-- Params:   p_cursor text FILL
-- Returns:  pg_snapshot
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._spark_lo(p_cursor text) RETURNS pg_snapshot
LANGUAGE sql IMMUTABLE AS $$ SELECT ((mbus._parse_position(p_cursor)).pos).lo $$;
