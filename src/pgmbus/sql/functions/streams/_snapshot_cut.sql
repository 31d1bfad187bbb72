-- Function: mbus._snapshot_cut(s, cutoff)
--
-- Purpose:  The snapshot that sees what s sees below cutoff and nothing from cutoff on
--           (a cutoff above xmax(s) is taken as xmax(s)): xmax becomes the cutoff, xip keeps only
--           the ids below it, and xmin is the first of those (or the cutoff). Used to position a
--           group at a time or an event id, and to hold back an ordered group's batch at the
--           oldest running transaction.
-- Params:   s       the snapshot to cut
--           cutoff  the first transaction id that must not be visible (xid8)
-- Returns:  pg_snapshot
-- Locks:    none
-- Calls:    none
-- Tables:   none
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
