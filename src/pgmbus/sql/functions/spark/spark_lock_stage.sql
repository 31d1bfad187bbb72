-- Function: mbus.spark_lock_stage(p_write_id)
--
-- Purpose:  spark_lock_stage(write_id): taken first in the task's staging transaction (shared).
-- Params:   p_write_id text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.spark_lock_stage(p_write_id text)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$ SELECT pg_catalog.pg_advisory_xact_lock_shared(mbus._spark_write_lock(p_write_id)) $$;
