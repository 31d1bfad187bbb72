-- Function: mbus.await_events_done()
--
-- Purpose:  This session no longer waits for events: removes its mbus.stream_waiter entry, so
--           publishers stop notifying on its account. It keeps listening (a notification caused
--           by another waiter is harmless).
-- Params:   none
-- Returns:  void
-- Locks:    row lock on this session's mbus.stream_waiter row (DELETE)
-- Calls:    none
-- Tables:   mbus.stream_waiter
CREATE OR REPLACE FUNCTION mbus.await_events_done()
RETURNS void
LANGUAGE sql VOLATILE
SET search_path = pg_catalog
AS $$
    DELETE FROM mbus.stream_waiter AS w WHERE w.pid = pg_backend_pid();
$$;
