-- base: what every engine of the mbus schema shares.
--   * secure defaults: PUBLIC has no rights on the schema. Functions are executable by PUBLIC
--     when created (per-schema default privileges cannot take that away), so the installer
--     ends every install and upgrade with SELECT mbus.restrict_public_execute(), which revokes
--     PUBLIC's EXECUTE from every mbus function except the entry points that
--     mbus.public_entry_points() lists (a catalog test checks the result); code that generates
--     functions at run time revokes likewise;
--   * mbus.settings: a small configuration table (retention, limits) read by the engines.
--
-- Migrations hold tables, types, indexes, data moves and DROPs only; every function and view
-- lives in src/pgmbus/sql/functions/ and is applied after the migrations.
-- Errors raised by the SQL API use the SQLSTATE class MB (see pgmbus.errors):
--   MB001 invalid name, MB002 not found, MB003 exists, MB004 bad selector, MB005 bad payload,
--   MB006 bad argument, MB007 stale lease, MB008 invalid state, MB009 log inconsistent.

COMMENT ON SCHEMA mbus IS 'pgmbus: queues, streams and timers inside PostgreSQL';

REVOKE ALL ON SCHEMA mbus FROM PUBLIC;

CREATE TABLE mbus.settings (
    key         text PRIMARY KEY CHECK (key ~ '^[a-z][a-z0-9_.]*$'),
    value       jsonb NOT NULL,
    description text
);

COMMENT ON TABLE mbus.settings IS 'Configuration of the mbus engines (one row per setting).';
