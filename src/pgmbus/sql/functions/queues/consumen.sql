-- Function: mbus.consumen(qname, cname, amt, p_now)
--
-- Purpose:  consumen(qname, cname, amt): at most amt messages, transactional style.
-- Params:   qname text FILL
--           cname text FILL
--           amt integer FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  SETOF mbus.qt_model
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.consumen(qname text, cname text, amt integer, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1, $2)', format('consumen_%s_by_%s', qname, cname))
    USING amt, p_now;
END;
$$;
