-- Function: mbus._snapshot_now()
--
-- Purpose:  The current snapshot, except that our own transaction (when it has an id) counts as
--           in progress: PostgreSQL leaves it out of xip, which would make events we publish after
--           reading look consumed already. The snapshot is then rebuilt as text with our id added
--           to xip (and xmin lowered to it when needed). Likewise the transactions of Spark task
--           attempts still pending in mbus.spark_pending: their events are in the
--           log but not yet published by the driver's commit, so they count as in progress
--           until that commit deletes their pending rows (or their events are deleted).
-- Params:   none
-- Returns:  pg_snapshot
-- Locks:    none (reads mbus.spark_pending, a table of one row per pending Spark task)
-- Calls:    none
-- Tables:   mbus.spark_pending
CREATE OR REPLACE FUNCTION mbus._snapshot_now()
RETURNS pg_snapshot
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    s     pg_snapshot;
    v_add xid8[];
    me    xid8 := pg_current_xact_id_if_assigned();
BEGIN
    -- One statement, so the pending attempts read are those of the snapshot returned.
    SELECT c.s, ARRAY(SELECT p.txid FROM mbus.spark_pending AS p
                      WHERE pg_visible_in_snapshot(p.txid, c.s))
    INTO s, v_add
    FROM (SELECT pg_current_snapshot() AS s) AS c;
    IF me IS NOT NULL AND pg_visible_in_snapshot(me, s) THEN
        v_add := v_add || me;
    END IF;
    IF cardinality(v_add) = 0 THEN
        RETURN s;
    END IF;
    RETURN (least(pg_snapshot_xmin(s), (SELECT x FROM unnest(v_add) AS x ORDER BY x LIMIT 1))::text
            || ':' || pg_snapshot_xmax(s)::text || ':'
            || (SELECT string_agg(x::text, ',' ORDER BY x)
                FROM (SELECT pg_snapshot_xip(s) AS x UNION SELECT unnest(v_add)) AS u)
           )::pg_snapshot;
END;
$$;
