-- Function: mbus._check_log()
--
-- Purpose:  Raise MB009 unless the log's transaction ids are this cluster's: the system
--           identifier stored in mbus.stream_state must be this cluster's, and no group's cursor
--           may hold a transaction id beyond the current snapshot's xmax (ids from the future: the
--           log came from elsewhere). Every function that compares transaction ids calls it first,
--           since snapshots from another cluster would silently skip or repeat events. The answer
--           is cached for the session in the setting mbus.streams_log_ok (a restore always comes
--           with new sessions); hot paths test that setting before calling.
-- Params:   none
-- Returns:  void; MB009 (with the hint to run repair-after-restore) when the log is not this
--           cluster's
-- Locks:    none (reads mbus.stream_state and mbus.stream_cursors)
-- Calls:    mbus._system_identifier, mbus.repair_after_restore
-- Tables:   mbus.stream_cursors, mbus.stream_state
CREATE OR REPLACE FUNCTION mbus._check_log()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_stored bigint;
    v_here   bigint;
BEGIN
    IF current_setting('mbus.streams_log_ok', true) = 'yes' THEN
        RETURN;
    END IF;
    SELECT s.system_identifier INTO v_stored FROM mbus.stream_state AS s;
    v_here := mbus._system_identifier();
    IF v_stored IS DISTINCT FROM v_here THEN
        RAISE EXCEPTION USING ERRCODE = 'MB009',
            MESSAGE = 'the stream log''s transaction ids belong to another cluster',
            DETAIL = format('stored for cluster %s, this is cluster %s (the database was '
                            'restored with pg_dump/pg_restore or copied)', v_stored, v_here),
            HINT = 'run `pgmbus streams repair-after-restore` (mbus.repair_after_restore())';
    END IF;
    IF EXISTS (SELECT 1 FROM mbus.stream_cursors AS c
               WHERE pg_snapshot_xmax(coalesce(c.hi, c.lo))
                     > pg_snapshot_xmax(pg_current_snapshot())) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB009',
            MESSAGE = 'a consumer group''s cursor holds transaction ids from the future',
            HINT = 'run `pgmbus streams repair-after-restore` (mbus.repair_after_restore())';
    END IF;
    PERFORM set_config('mbus.streams_log_ok', 'yes', false);
END;
$$;
