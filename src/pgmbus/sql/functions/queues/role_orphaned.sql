-- Function: mbus.role_orphaned(role)
--
-- Purpose:  Whether a role is one that pgmbus made for a database that no longer exists (DROP
--           DATABASE leaves cluster-wide roles behind) and that nothing else uses: its comment is
--           pgmbus's mark with a database oid that is gone (or this database's own), and it has no
--           privileges or objects left anywhere (pg_shdepend: DROP DATABASE
--           removes the dropped database's rows, shared objects such as databases keep theirs). Such a role may be adopted by a database of
--           the same name (the role's name carries the database name) instead of blocking the
--           queue's creation forever; a user's role or another live database's role never is.
-- Params:   role  the role's name (text)
-- Returns:  boolean
-- Locks:    none (reads the shared catalogs)
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.role_orphaned(role text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT EXISTS (
        SELECT 1
        FROM pg_roles AS r,
             LATERAL substring(shobj_description(r.oid, 'pg_authid')
                               FROM '^made by pgmbus for database .* \(oid ([0-9]+)\)$') AS m(db)
        WHERE r.rolname = role
          AND m.db IS NOT NULL
          AND (m.db::oid = (SELECT d.oid FROM pg_database AS d
                            WHERE d.datname = current_database())
               OR NOT EXISTS (SELECT 1 FROM pg_database AS d WHERE d.oid = m.db::oid))
          AND NOT EXISTS (SELECT 1 FROM pg_shdepend AS s
                          WHERE s.refclassid = 'pg_authid'::regclass AND s.refobjid = r.oid));
$$;
