-- Function: mbus.log_status()
--
-- Purpose:  log_status(): whether the log's transaction ids are this cluster's (for health checks).
-- Params:   none
-- Returns:  TABLE (consistent boolean, stored_system_identifier bigint, system_identifier bigint, repaired_at timestamptz)
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.log_status()
RETURNS TABLE (consistent boolean, stored_system_identifier bigint,
               system_identifier bigint, repaired_at timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT s.system_identifier = mbus._system_identifier(), s.system_identifier,
           mbus._system_identifier(), s.repaired_at
    FROM mbus.stream_state AS s;
$$;
