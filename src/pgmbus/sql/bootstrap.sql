-- Bootstrap of the schema installer: the schema, its migration ledger and its function record.
-- Run by pgmbus.schema under the installer's advisory lock, before any migration, so that the
-- ledger exists to record migration 0001 itself. Idempotent.
CREATE SCHEMA IF NOT EXISTS mbus;

CREATE TABLE IF NOT EXISTS mbus.schema_migrations (
    version         integer PRIMARY KEY CHECK (version > 0),
    name            text        NOT NULL CHECK (name ~ '^[a-z0-9_]+$'),
    checksum        text        NOT NULL CHECK (checksum ~ '^[0-9a-f]{64}$'),
    package_version text        NOT NULL,
    applied_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);

COMMENT ON TABLE mbus.schema_migrations IS
    'Migrations of the mbus schema applied to this database, with the sha256 of each file.';

CREATE TABLE IF NOT EXISTS mbus.schema_functions (
    singleton       boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    checksum        text        NOT NULL CHECK (checksum ~ '^[0-9a-f]{64}$'),
    catalog_digest  text        NOT NULL,
    package_version text        NOT NULL,
    installed_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);

COMMENT ON TABLE mbus.schema_functions IS
    'The function set installed from sql/functions/: sha256 of the files, digest of the catalog.';
