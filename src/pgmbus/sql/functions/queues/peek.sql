-- Function: mbus.peek(qname, msgid)
--
-- Purpose:  FILL
-- Params:   qname text FILL
--           msgid text DEFAULT NULL FILL
-- Returns:  boolean
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.peek(qname text, msgid text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v boolean;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1)', 'peek_' || qname) INTO v USING msgid;
    RETURN v;
END;
$$;
