-- Function: mbus.bury(qname, token, reason, p_now)
--
-- Purpose:  FILL
-- Params:   qname text FILL
--           token uuid FILL
--           reason text FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.bury(qname text, token uuid, reason text, p_now timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_id bigint;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, $3)', 'bury_' || qname) INTO v_id USING token, reason, p_now;
    RETURN v_id;
END;
$$;
