-- Queries of `pgmbus uninstall` (pgmbus.uninstall). Those run without parameters write
-- format()'s % once; those with parameters double it (psycopg's placeholders).

-- name: dependents
-- What DROP SCHEMA mbus CASCADE takes with it outside mbus: triggers on other schemas' tables
-- that call mbus functions (change capture) and views outside mbus over mbus objects.
SELECT DISTINCT 'trigger' AS kind, format('%I on %s', t.tgname, t.tgrelid::regclass) AS name
FROM pg_trigger AS t
JOIN pg_proc AS p ON p.oid = t.tgfoid
JOIN pg_class AS c ON c.oid = t.tgrelid
WHERE p.pronamespace = 'mbus'::regnamespace AND c.relnamespace <> 'mbus'::regnamespace
  AND NOT t.tgisinternal
UNION
SELECT DISTINCT 'view', v.oid::regclass::text
FROM pg_rewrite AS r
JOIN pg_class AS v ON v.oid = r.ev_class
JOIN pg_depend AS d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
LEFT JOIN pg_class AS dc ON d.refclassid = 'pg_class'::regclass AND dc.oid = d.refobjid
LEFT JOIN pg_proc AS dp ON d.refclassid = 'pg_proc'::regclass AND dp.oid = d.refobjid
WHERE v.relnamespace <> 'mbus'::regnamespace
  AND (dc.relnamespace = 'mbus'::regnamespace OR dp.pronamespace = 'mbus'::regnamespace)
ORDER BY 1, 2;

-- name: roles
-- The roles pgmbus made for this database: ensure_role marks each with this comment.
SELECT r.rolname
FROM pg_roles AS r
WHERE shobj_description(r.oid, 'pg_authid') = format(
    'made by pgmbus for database %s (oid %s)', current_database(),
    (SELECT d.oid FROM pg_database AS d WHERE d.datname = current_database()))
ORDER BY 1;

-- name: lock
-- The installer's lock, for this transaction: no install or upgrade runs meanwhile.
SELECT pg_advisory_xact_lock(%(key)s);

-- name: schema_exists
SELECT to_regnamespace('mbus') IS NOT NULL;

-- name: drop_schema
DROP SCHEMA mbus CASCADE;

-- name: drop_role
-- What the role still holds in this database (grants outside mbus), then the role; a role
-- that holds objects in another database makes DROP ROLE fail, and the whole uninstall with it.
SELECT format('DROP OWNED BY %%I', %(role)s::text), format('DROP ROLE %%I', %(role)s::text);
