-- Function: mbus._snap_contains(a, b)
--
-- Purpose:  _snap_contains(a, b): every transaction visible in b is visible in a.
-- Params:   a pg_snapshot FILL
--           b pg_snapshot FILL
-- Returns:  boolean
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._snap_contains(a pg_snapshot, b pg_snapshot)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT pg_snapshot_xmax(b) <= pg_snapshot_xmax(a)
       AND NOT EXISTS (SELECT 1 FROM pg_snapshot_xip(a) AS x
                       WHERE x < pg_snapshot_xmax(b) AND pg_visible_in_snapshot(x, b));
$$;
