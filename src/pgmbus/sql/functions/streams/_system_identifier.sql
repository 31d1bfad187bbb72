-- Function: mbus._system_identifier()
--
-- Purpose:  This cluster's identity, pg_control_system().system_identifier. SECURITY DEFINER
--           because pg_control_system needs more than PUBLIC has; the search_path is pinned.
--           The stream log stores transaction ids, which only mean something in the cluster that
--           wrote them: mbus.stream_state keeps the identifier of that cluster, and a difference
--           means the database was restored or copied into another one.
-- Params:   none
-- Returns:  bigint: the system identifier
-- Locks:    none
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus._system_identifier()
RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT system_identifier FROM pg_control_system() $$;
