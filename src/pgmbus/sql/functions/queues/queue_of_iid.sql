-- Function: mbus.queue_of_iid(iid)
--
-- Purpose:  The queue name an iid was made for ('<qname>.<n>@<database>'), or NULL when iid has
--           another form. Does not check that the queue exists or that the database is this one.
-- Params:   iid  the iid to read (text)
-- Returns:  text: the queue name, or NULL
-- Locks:    none
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.queue_of_iid(iid text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
BEGIN
    -- PL/pgSQL keeps the expression's plan; as an SQL function with SET (never inlined) it was
    -- planned again on every call (twice per consume_after dependency).
    RETURN (regexp_match(iid, '^([a-z][a-z0-9_]*)\.[0-9]+@'))[1];
END;
$$;
