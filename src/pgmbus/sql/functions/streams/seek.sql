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
-- Locks:    first the reader's advisory lock of every slot (pg_advisory_xact_lock of
--           mbus._reader_lock_key, in slot order, as read_next takes them), then the group's row
--           of mbus.stream_groups FOR UPDATE (then UPDATE) and its rows of mbus.stream_cursors
--           (UPDATE), all held to commit. So a seek waits for every reader that is reading the
--           group in an open transaction, and a reader that starts after it waits for it: a
--           commit of a cursor read before the seek can no longer undo the seek.
--           Not covered: a cursor read in one transaction and committed in a later
--           one (the Spark stream reader) after the seek committed; such a commit moves the
--           group past the target if the cursor is ahead of it (do not seek under a running
--           Spark query: docs/spark.md)
-- Calls:    mbus._check_log, mbus._reader_lock_key, mbus._start_snapshot
-- Tables:   mbus.stream_cursors, mbus.stream_groups
CREATE OR REPLACE FUNCTION mbus.seek("group" text, start text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_snap pg_snapshot;
    v_slot integer;
BEGIN
    PERFORM mbus._check_log();
    FOR v_slot IN
        SELECT sc.slot FROM mbus.stream_cursors AS sc WHERE sc.group_name = "group"
        ORDER BY sc.slot
    LOOP
        PERFORM pg_advisory_xact_lock(mbus._reader_lock_key("group", v_slot));
    END LOOP;
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
