-- Function: mbus.consume(qname, cname, p_now)
--
-- Purpose:  consume(qname[, cname]): at most one message for the consumer (default: 'default'),
--           removed when the caller's transaction commits.
-- Params:   qname text FILL
--           cname text DEFAULT 'default' FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  SETOF mbus.qt_model
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.consume(qname text, cname text DEFAULT 'default', p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1)', format('consume_%s_by_%s', qname, cname))
    USING p_now;
END;
$$;
