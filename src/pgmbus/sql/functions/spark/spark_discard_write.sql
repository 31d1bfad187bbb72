-- Function: mbus.spark_discard_write(p_write_id)
--
-- Purpose:  spark_discard_write(write_id): drop every staged row of a write (all task attempts).
-- Params:   p_write_id text FILL
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.spark_discard_write(p_write_id text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_n bigint;
BEGIN
    DELETE FROM mbus.spark_staged WHERE write_id = p_write_id;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    DELETE FROM mbus.spark_writes WHERE write_id = p_write_id;
    RETURN v_n;
END;
$$;
