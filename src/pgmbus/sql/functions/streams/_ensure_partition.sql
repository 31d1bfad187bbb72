-- Function: mbus._ensure_partition(p_no)
--
-- Purpose:  _ensure_partition(n): create partition n of mbus.events (ids [n * 2^40, (n + 1) * 2^40)).
--           Partitions are insert-only, so insert-driven autovacuum is off (analyze still runs).
-- Params:   p_no integer FILL
-- Returns:  boolean
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._ensure_partition(p_no integer)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_name text := format('events_%s', lpad(p_no::text, 7, '0'));
    v_lo bigint := p_no::bigint << 40;
BEGIN
    IF EXISTS (SELECT 1 FROM mbus.event_partitions AS p WHERE p.partition_no = p_no) THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE mbus.%I PARTITION OF mbus.events FOR VALUES FROM (%s) TO (%s) '
                   'WITH (autovacuum_vacuum_insert_threshold = -1)',
                   v_name, v_lo, v_lo + (1::bigint << 40));
    INSERT INTO mbus.event_partitions (partition_no, name, lo_id, hi_id)
    VALUES (p_no, v_name, v_lo, v_lo + (1::bigint << 40));
    RETURN true;
END;
$$;
