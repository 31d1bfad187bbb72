-- Function: mbus.nack(qname, token, delay, p_now)
--
-- Purpose:  FILL
-- Params:   qname text FILL
--           token uuid FILL
--           delay interval DEFAULT '0'::interval FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.nack(qname text, token uuid, delay interval DEFAULT '0'::interval,
                          p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, $3)', 'nack_' || qname) USING token, delay, p_now;
END;
$$;
