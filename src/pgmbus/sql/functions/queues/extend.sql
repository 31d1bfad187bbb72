-- Function: mbus.extend(qname, token, lease, p_now)
--
-- Purpose:  FILL
-- Params:   qname text FILL
--           token uuid FILL
--           lease interval FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  timestamptz
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.extend(qname text, token uuid, lease interval, p_now timestamptz DEFAULT NULL)
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_end timestamptz;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, $3)', 'extend_' || qname) INTO v_end USING token, lease, p_now;
    RETURN v_end;
END;
$$;
