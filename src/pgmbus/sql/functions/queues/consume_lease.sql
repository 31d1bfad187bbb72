-- Function: mbus.consume_lease(qname, cname, amt, lease, max_attempts, p_now)
--
-- Purpose:  consume_lease(qname, cname, amt, lease, max_attempts): lease style claim (see lease_<q>_by_<c>).
-- Params:   qname text FILL
--           cname text FILL
--           amt integer DEFAULT 1 FILL
--           lease interval DEFAULT '30 seconds' FILL
--           max_attempts integer DEFAULT NULL FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  SETOF mbus.qt_model
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.consume_lease(qname text, cname text, amt integer DEFAULT 1,
                                   lease interval DEFAULT '30 seconds',
                                   max_attempts integer DEFAULT NULL,
                                   p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1, $2, $3, $4)', format('lease_%s_by_%s', qname, cname))
    USING amt, lease, max_attempts, p_now;
END;
$$;
