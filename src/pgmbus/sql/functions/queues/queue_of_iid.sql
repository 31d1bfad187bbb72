-- Function: mbus.queue_of_iid(iid)
--
-- Purpose:  queue_of_iid(iid): the queue name an iid was made for ('<qname>.<n>@<database>'), or NULL.
-- Params:   iid text FILL
-- Returns:  text
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.queue_of_iid(iid text)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT (regexp_match(iid, '^([a-z][a-z0-9_]*)\.[0-9]+@'))[1];
$$;
