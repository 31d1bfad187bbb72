-- Function: mbus.clear_queue(qname, p_now)
--
-- Purpose:  FILL
-- Params:   qname text FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.clear_queue(qname text, p_now timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v bigint;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1)', 'clear_queue_' || qname) INTO v USING p_now;
    RETURN v;
END;
$$;
