-- Function: mbus.await_events()
--
-- Purpose:  LISTEN on mbus_events and register this session as waiting for events: publish,
--           publish_batch, notify and the capture triggers NOTIFY only while some session is
--           registered, so a log whose readers never sleep costs no NOTIFY (whose commit-time
--           lock is global and serialises committing transactions). Call it in a transaction of
--           its own (autocommit) and then look at the log once more before sleeping: an event
--           whose transaction committed before this registration is found by that look, one
--           committed after it notifies. Entries of sessions that are gone are removed on the
--           way. The table is unlogged, so this commit writes no WAL and waits for no flush.
-- Params:   none
-- Returns:  void
-- Locks:    row locks on mbus.stream_waiter rows (DELETE of dead sessions' entries, upsert of
--           its own)
-- Calls:    none
-- Tables:   mbus.stream_waiter
CREATE OR REPLACE FUNCTION mbus.await_events()
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    LISTEN mbus_events;
    -- pg_stat_get_activity(pid) reads one backend's entry; pg_stat_activity would read all.
    DELETE FROM mbus.stream_waiter AS w
    WHERE w.pid <> pg_backend_pid()
      AND NOT EXISTS (SELECT 1 FROM pg_stat_get_activity(w.pid) AS a);
    INSERT INTO mbus.stream_waiter (pid) VALUES (pg_backend_pid())
    ON CONFLICT ON CONSTRAINT stream_waiter_pkey DO UPDATE SET since = now();
END;
$$;
