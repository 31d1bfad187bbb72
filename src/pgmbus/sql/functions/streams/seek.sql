-- Function: mbus.seek("group", start)
--
-- Purpose:  seek(group, start): reposition every slot of a group ('beginning', 'now', a timestamp or
--           an event id: every event published at or after it is read again). Revives an expired group.
--           Events of transactions that began before the target may be read too (the cursor is a
--           snapshot, so it cuts between transactions, never inside one).
-- Params:   "group" text FILL
--           start text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.seek("group" text, start text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_snap pg_snapshot;
BEGIN
    PERFORM mbus._check_log();
    PERFORM 1 FROM mbus.stream_groups AS g WHERE g.name = "group" FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('consumer group %L does not exist', "group");
    END IF;
    v_snap := mbus._start_snapshot(start);
    UPDATE mbus.stream_cursors AS sc
    SET lo = v_snap, hi = NULL, after_txid = NULL, after_id = NULL, lo_taken_at = now(),
        committed_at = now()
    WHERE sc.group_name = "group";
    UPDATE mbus.stream_groups AS g
    SET state = 'active', expired_at = NULL, expired_why = NULL
    WHERE g.name = "group";
END;
$$;
