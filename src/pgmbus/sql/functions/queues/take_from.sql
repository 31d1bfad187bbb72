-- Function: mbus.take_from(qname, cname, iid)
--
-- Purpose:  FILL
-- Params:   qname text FILL
--           cname text FILL
--           iid text FILL
-- Returns:  SETOF mbus.qt_model
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.take_from(qname text, cname text, iid text)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1)', format('take_from_%s_by_%s', qname, cname))
    USING iid;
END;
$$;
