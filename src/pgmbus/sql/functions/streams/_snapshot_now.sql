-- Function: mbus._snapshot_now()
--
-- Purpose:  The current snapshot, except that our own transaction (when it has an id) counts as
--           in progress: PostgreSQL leaves it out of xip, which would make events we publish after
--           reading look consumed already. The snapshot is then rebuilt as text with our id added
--           to xip (and xmin lowered to it when needed).
-- Params:   none
-- Returns:  pg_snapshot
-- Locks:    none
-- Callers:  mbus.read_next (the batch's upper snapshot), mbus._start_snapshot ('now' and the cut
--           of a timestamp or id), mbus.current_cursor, mbus.repair_after_restore
CREATE OR REPLACE FUNCTION mbus._snapshot_now()
RETURNS pg_snapshot
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    s  pg_snapshot := pg_current_snapshot();
    me xid8 := pg_current_xact_id_if_assigned();
BEGIN
    IF me IS NULL OR NOT pg_visible_in_snapshot(me, s) THEN
        RETURN s;
    END IF;
    RETURN (least(pg_snapshot_xmin(s), me)::text || ':' || pg_snapshot_xmax(s)::text || ':'
            || (SELECT string_agg(x::text, ',' ORDER BY x)
                FROM (SELECT pg_snapshot_xip(s) AS x UNION SELECT me) AS u))::pg_snapshot;
END;
$$;
