-- Function: mbus.ack(qname, token, p_now)
--
-- Purpose:  FILL
-- Params:   qname text FILL
--           token uuid FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.ack(qname text, token uuid, p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2)', 'ack_' || qname) USING token, p_now;
END;
$$;
