-- Function: mbus._snapshot_xip(p_snapshot)
--
-- Purpose:  The transactions in progress in a snapshot, as an array (pg_snapshot_xip returns a
--           set). IMMUTABLE, so that with a constant snapshot the planner computes it once
--           while planning and the caller's `txid = ANY (...)` is an index condition with a
--           constant (mbus._between with the literal cursors of mbus.spark_read).
-- Params:   p_snapshot  the snapshot (pg_snapshot)
-- Returns:  xid8[] ('{}' when none was in progress)
-- Locks:    none (computes only)
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus._snapshot_xip(p_snapshot pg_snapshot) RETURNS xid8[]
LANGUAGE sql IMMUTABLE
AS $$ SELECT ARRAY(SELECT pg_catalog.pg_snapshot_xip(p_snapshot)) $$;
