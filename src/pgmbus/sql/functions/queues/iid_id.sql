-- Function: mbus.iid_id(iid, qname)
--
-- Purpose:  iid_id(iid, qname): the message id n when iid is '<qname>.<n>@<this database>' (the iids
--           this queue makes), else NULL. Such iids are not stored: the row's id gives them back.
-- Params:   iid text FILL
--           qname text FILL
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.iid_id(iid text, qname text)
RETURNS bigint
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN r[1] = qname AND r[3] = pg_catalog.current_database()
                     AND pg_catalog.length(r[2]) <= 18 THEN r[2]::bigint END
    FROM (SELECT pg_catalog.regexp_match(iid, '^([a-z][a-z0-9_]*)\.([0-9]+)@(.*)$') AS r) AS s;
$$;
