-- Function: mbus.consumer_functions(qname, cname)
--
-- Purpose:  consumer_functions(qname, cname): the names of the functions generated for one consumer.
-- Params:   qname text FILL
--           cname text FILL
-- Returns:  text[]
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.consumer_functions(qname text, cname text)
RETURNS text[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT ARRAY[format('consume_%s_by_%s', qname, cname), format('consumen_%s_by_%s', qname, cname),
                 format('lease_%s_by_%s', qname, cname), format('take_from_%s_by_%s', qname, cname)];
$$;
