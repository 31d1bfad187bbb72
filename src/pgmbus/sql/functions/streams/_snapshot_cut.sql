-- Function: mbus._snapshot_cut(s, cutoff)
--
-- Purpose:  _snapshot_cut(s, cutoff): the snapshot that sees what s sees below cutoff and nothing from
--           cutoff on (cutoff <= xmax(s)). Used to position a group at a time or an event id.
-- Params:   s pg_snapshot FILL
--           cutoff xid8 FILL
-- Returns:  pg_snapshot
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._snapshot_cut(s pg_snapshot, cutoff xid8)
RETURNS pg_snapshot
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_cut xid8 := least(cutoff, pg_snapshot_xmax(s));
    v_xip xid8[];
BEGIN
    v_xip := ARRAY(SELECT x FROM pg_snapshot_xip(s) AS x WHERE x < v_cut ORDER BY x);
    RETURN (coalesce(v_xip[1], v_cut)::text || ':' || v_cut::text || ':'
            || array_to_string(v_xip, ','))::pg_snapshot;
END;
$$;
