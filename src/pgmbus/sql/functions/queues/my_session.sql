-- Function: mbus.my_session()
--
-- Purpose:  FILL
-- Params:   none
-- Returns:  FILL
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.my_session(OUT pid integer, OUT backend_start timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT a.pid, a.backend_start FROM pg_stat_activity AS a WHERE a.pid = pg_backend_pid();
$$;
