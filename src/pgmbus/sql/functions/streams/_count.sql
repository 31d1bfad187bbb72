-- Function: mbus._count(p_name, p_by)
--
-- Purpose:  FILL
-- Params:   p_name text FILL
--           p_by bigint DEFAULT 1 FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._count(p_name text, p_by bigint DEFAULT 1)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    INSERT INTO mbus.stream_counters AS c (name, value) VALUES (p_name, p_by)
    ON CONFLICT (name) DO UPDATE SET value = c.value + excluded.value;
$$;
