-- Function: mbus.queue_role(kind, qname, cname)
--
-- Purpose:  queue_role(kind, qname, cname): the role name ('post' or 'consume').
-- Params:   kind text FILL
--           qname text FILL
--           cname text DEFAULT NULL FILL
-- Returns:  text
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.queue_role(kind text, qname text, cname text DEFAULT NULL)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT CASE kind WHEN 'post' THEN format('mbus_%s_post_%s', current_database(), qname)
                     ELSE format('mbus_%s_consume_%s_by_%s', current_database(), qname, cname) END;
$$;
