-- Queries of the schema installer (pgmbus.schema).

-- name: ledger_exists
SELECT to_regclass('mbus.schema_migrations') IS NOT NULL;

-- name: applied
SELECT version, name, checksum, package_version, applied_at
FROM mbus.schema_migrations
ORDER BY version;

-- name: record
INSERT INTO mbus.schema_migrations (version, name, checksum, package_version)
VALUES (%(version)s, %(name)s, %(checksum)s, %(package_version)s);

-- name: lock
SELECT pg_advisory_lock(%(key)s);

-- name: unlock
SELECT pg_advisory_unlock(%(key)s);

-- name: functions_recorded
SELECT checksum, catalog_digest, package_version, installed_at
FROM mbus.schema_functions;

-- name: record_functions
INSERT INTO mbus.schema_functions AS f (checksum, catalog_digest, package_version)
VALUES (%(checksum)s, %(catalog_digest)s, %(package_version)s)
ON CONFLICT (singleton) DO UPDATE
SET checksum = excluded.checksum, catalog_digest = excluded.catalog_digest,
    package_version = excluded.package_version, installed_at = clock_timestamp();

-- name: catalog_digest
-- What the function files define, as the catalog has it now: functions by name (their full
-- definitions) and views. Compared with the digest recorded at install by `pgmbus status`.
SELECT md5(coalesce(string_agg(d.def, E'\n' ORDER BY d.name), ''))
FROM (
    SELECT p.oid::regprocedure::text AS name, pg_get_functiondef(p.oid) AS def
    FROM pg_proc AS p
    WHERE p.pronamespace = 'mbus'::regnamespace AND p.proname = ANY (%(functions)s::text[])
    UNION ALL
    SELECT c.oid::regclass::text, pg_get_viewdef(c.oid)
    FROM pg_class AS c
    WHERE c.relnamespace = 'mbus'::regnamespace AND c.relkind = 'v'
      AND c.relname = ANY (%(views)s::text[])
) AS d;

-- name: regenerate_queues
SELECT mbus.regenerate_queue(q.qname) FROM mbus.queue AS q ORDER BY q.qname;

-- name: first_partitions
-- A new log gets its first partitions (and those ahead) from maintain; an existing one keeps
-- what it has.
SELECT mbus._ensure_partition(1), mbus.maintain()
WHERE NOT EXISTS (SELECT FROM mbus.event_partitions);

-- name: condition_sandbox
-- Conditions that are not the owner's run as the role mbus_condition (a NOTICE when it cannot
-- be made).
SELECT mbus._condition_sandbox();

-- name: restrict_public_execute
SELECT mbus.restrict_public_execute();

-- name: leftovers
-- Functions, views and triggers in mbus that no function file defines and no queue generates
-- (left behind by an upgrade, or made by hand), each with the statement that drops it.
-- With fresh (inside the transaction that has just applied the function files) a function
-- of a file's name that this transaction did not write is an old overload, and is listed too.
-- Triggers first, then views, then functions: dependents before what they use.
WITH generated AS (
    SELECT g.name
    FROM mbus.queue AS q CROSS JOIN LATERAL mbus.generated_names(q.qname) AS g
    WHERE g.kind = 'function'
    UNION
    SELECT g.name
    FROM mbus.consumer AS c CROSS JOIN LATERAL mbus.generated_names(c.qname, c.cname) AS g
    WHERE g.kind = 'function'
)
SELECT l.kind, l.name, l.ddl
FROM (
    SELECT 1 AS step, 'trigger' AS kind,
           format('%%I on %%s', t.tgname, t.tgrelid::regclass) AS name,
           format('DROP TRIGGER %%I ON %%s', t.tgname, t.tgrelid::regclass) AS ddl
    FROM pg_trigger AS t
    JOIN pg_class AS c ON c.oid = t.tgrelid
    WHERE c.relnamespace = 'mbus'::regnamespace AND NOT t.tgisinternal AND t.tgparentid = 0
      AND t.tgname <> ALL (%(triggers)s::text[])
    UNION ALL
    SELECT 2, 'view', c.oid::regclass::text, format('DROP VIEW %%s', c.oid::regclass)
    FROM pg_class AS c
    WHERE c.relnamespace = 'mbus'::regnamespace AND c.relkind = 'v'
      AND c.relname <> ALL (%(views)s::text[])
    UNION ALL
    SELECT 3, 'function', p.oid::regprocedure::text,
           format('DROP %%s %%s',
                  CASE p.prokind WHEN 'p' THEN 'PROCEDURE' WHEN 'a' THEN 'AGGREGATE'
                                 ELSE 'FUNCTION' END,
                  p.oid::regprocedure)
    FROM pg_proc AS p
    WHERE p.pronamespace = 'mbus'::regnamespace
      AND (p.proname <> ALL (%(functions)s::text[])
           AND p.proname NOT IN (SELECT g.name FROM generated AS g)
           OR %(fresh)s AND p.proname = ANY (%(functions)s::text[])
              AND p.xmin <> xid(pg_current_xact_id()))
) AS l
ORDER BY l.step, l.name;
