-- Function: mbus.seek("group", start)
--
-- Purpose:  Reposition every slot of a group at start ('beginning', 'now', a timestamp or an event
--           id: every event published at or after it is read again), clearing any position inside
--           a batch. Revives an expired group. Events of transactions that began before the
--           target may be read too (the cursor is a snapshot, so it cuts between transactions,
--           never inside one; see mbus._start_snapshot). Pending retries and dead letters stay.
-- Params:   "group"  the group's name
--           start    'beginning', 'now', a timestamp or an event id (text)
-- Returns:  void; MB002 when the group does not exist, MB006 for a bad start, MB009 when the
--           log is not this cluster's
-- Locks:    the group's row of mbus.stream_groups FOR UPDATE (then UPDATE) and its rows of
--           mbus.stream_cursors (UPDATE), held to commit; waits for a commit in progress on the
--           group. It does not take the reader's advisory lock: a reader's later commit of a
--           cursor from before the seek is refused as behind, or moves the group past the target
-- Callers:  pgmbus.streams.client.seek (sql/streams.sql 'seek'), the CLI `pgmbus streams seek`;
--           tests under tests/streams
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
