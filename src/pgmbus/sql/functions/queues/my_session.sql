-- Function: mbus.my_session()
--
-- Purpose:  This session's identity: its backend pid and backend start time. The pair tells a live
--           session from a later one that got the same pid, so temporary queues and consumers are
--           tied to it.
-- Params:   none
-- Returns:  record (pid integer, backend_start timestamptz)
-- Locks:    none (reads pg_stat_activity)
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.my_session(OUT pid integer, OUT backend_start timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT a.pid, a.backend_start FROM pg_stat_activity AS a WHERE a.pid = pg_backend_pid();
$$;
