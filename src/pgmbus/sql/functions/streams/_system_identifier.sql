-- Function: mbus._system_identifier()
--
-- Purpose:  _system_identifier(): this cluster's identity (pg_control_system needs more than PUBLIC has).
-- Params:   none
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._system_identifier()
RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT system_identifier FROM pg_control_system() $$;
