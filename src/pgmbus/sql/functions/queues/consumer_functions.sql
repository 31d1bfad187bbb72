-- Function: mbus.consumer_functions(qname, cname)
--
-- Purpose:  The names of the functions generated for one consumer: consume_, consumen_, lease_ and
--           take_from_<qname>_by_<cname>, as mbus.generated_names lists them (the one list the
--           generator, the drop and secure code and the collision check share).
-- Params:   qname  the queue's name (text)
--           cname  the consumer's name (text)
-- Returns:  text[]: the four function names (unqualified; they live in schema mbus)
-- Locks:    none
-- Calls:    mbus.generated_names
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.consumer_functions(qname text, cname text)
RETURNS text[]
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT ARRAY(SELECT g.name FROM mbus.generated_names(qname, cname) AS g
                 WHERE g.kind = 'function');
$$;
