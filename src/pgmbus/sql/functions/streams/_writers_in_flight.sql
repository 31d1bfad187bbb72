-- Function: mbus._writers_in_flight()
--
-- Purpose:  Whether another session's transaction is writing mbus.events right now (it holds
--           ROW EXCLUSIVE on the table: an INSERT, COPY, publish or capture trigger, until it
--           ends). A reader calls it after mbus.await_events has committed and before its look
--           at the log: such a writer may have checked mbus.stream_waiter before the
--           registration and then commits without notifying, after the look. While this says
--           true the reader sleeps briefly instead of its full idle wait, so no wake-up is lost
--           for longer than that short poll. Readers (AccessShareLock) do not count.
-- Params:   none
-- Returns:  boolean
-- Locks:    none (reads pg_locks, which briefly takes the lock manager's partition locks)
-- Calls:    none
-- Tables:   mbus.events
CREATE OR REPLACE FUNCTION mbus._writers_in_flight()
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT EXISTS (SELECT 1 FROM pg_locks AS l
                   WHERE l.locktype = 'relation' AND l.relation = 'mbus.events'::regclass
                     AND l.database = (SELECT d.oid FROM pg_database AS d
                                       WHERE d.datname = current_database())
                     AND l.mode = 'RowExclusiveLock' AND l.pid <> pg_backend_pid());
$$;
