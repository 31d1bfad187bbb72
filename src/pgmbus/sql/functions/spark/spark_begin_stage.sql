-- Function: mbus.spark_begin_stage(p_write_id, p_now)
--
-- Purpose:  spark_begin_stage(write_id, p_now): register the write (its own short transaction, before
--           the task's COPY, so that tasks of one write never wait for each other on this row).
-- Params:   p_write_id text FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.spark_begin_stage(p_write_id text, p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    INSERT INTO mbus.spark_writes AS w (write_id, first_staged_at, last_staged_at)
    VALUES (p_write_id, coalesce(p_now, now()), coalesce(p_now, now()))
    ON CONFLICT (write_id) DO UPDATE
    SET last_staged_at = greatest(w.last_staged_at, excluded.last_staged_at);
$$;
