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
