-- Function: mbus.queue_role(kind, qname, cname)
--
-- Purpose:  The name of a queue's role: 'mbus_<database>_post_<qname>' for kind 'post',
--           'mbus_<database>_consume_<qname>_by_<cname>' otherwise (the original API's names; roles
--           are cluster-wide, hence the database in the name).
-- Params:   kind   'post' or 'consume' (text)
--           qname  the queue's name (text)
--           cname  the consumer's name (text; only for 'consume')
-- Returns:  text: the role name (may exceed 63 bytes; mbus.ensure_role checks)
-- Locks:    none
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.queue_role(kind text, qname text, cname text DEFAULT NULL)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT CASE kind WHEN 'post' THEN format('mbus_%s_post_%s', current_database(), qname)
                     ELSE format('mbus_%s_consume_%s_by_%s', current_database(), qname, cname) END;
$$;
