-- Function: mbus.iid_id(iid, qname)
--
-- Purpose:  The message id n when iid is '<qname>.<n>@<this database>' (the iids this queue makes),
--           else NULL (another queue's or database's iid, a user's own iid, n longer than 18
--           digits or with a leading zero, which mbus.check_iid refuses at post). Such iids are
--           not stored: the row's id gives them back, and lookups by iid go by id. No SET
--           search_path (it would cost a GUC save and restore per call on the post and take
--           paths); every catalog name is qualified instead.
-- Params:   iid    the iid to read (text)
--           qname  the queue it must belong to (text)
-- Returns:  bigint: n, or NULL
-- Locks:    none
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.iid_id(iid text, qname text)
RETURNS bigint
LANGUAGE plpgsql STABLE
-- PL/pgSQL: as an SQL function it could not be inlined (its body reads a sub-select) and
-- PostgreSQL 15 planned that body again on every call (every peek and take by iid); PL/pgSQL
-- evaluates these lines as plain expressions.
AS $$
DECLARE
    r text[] := pg_catalog.regexp_match(iid, '^([a-z][a-z0-9_]*)\.([1-9][0-9]*)@(.*)$');
BEGIN
    IF r[1] = qname AND r[3] = pg_catalog.current_database() AND pg_catalog.length(r[2]) <= 18 THEN
        RETURN r[2]::bigint;
    END IF;
    RETURN NULL;
END;
$$;
