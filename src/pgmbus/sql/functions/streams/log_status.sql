-- Function: mbus.log_status()
--
-- Purpose:  Whether the log's transaction ids are this cluster's, for health checks: the system
--           identifier stored in mbus.stream_state against this cluster's. It does not run
--           _check_log's second test (cursors holding transaction ids from the future), so a
--           restore into the same cluster's older base backup reports consistent while every
--           stream function raises MB009 (a known limit).
-- Params:   none
-- Returns:  TABLE (consistent boolean, stored_system_identifier bigint, system_identifier bigint,
--           repaired_at timestamptz): one row (repaired_at NULL until a repair)
-- Locks:    none (reads only)
-- Calls:    mbus._system_identifier
-- Tables:   mbus.stream_state
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
