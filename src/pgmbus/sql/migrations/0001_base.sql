-- 0001 base: what every engine of the mbus schema shares.
--   * secure defaults: PUBLIC has no rights on the schema. Functions are executable by PUBLIC
--     when created (per-schema default privileges cannot take that away), so every migration
--     ends with SELECT mbus.restrict_public_execute(), which revokes PUBLIC's EXECUTE from every
--     mbus function except the entry points listed in mbus.public_entry_point (a catalog test
--     checks the result); code that generates functions at run time revokes likewise;
--   * mbus.check_name: the naming rule for queues, consumers, groups and the like;
--   * mbus.settings: a small configuration table (retention, limits) read by the engines.
-- Errors raised by the SQL API use the SQLSTATE class MB (see pgmbus.errors):
--   MB001 invalid name, MB002 not found, MB003 exists, MB004 bad selector, MB005 bad payload,
--   MB006 bad argument, MB007 stale lease, MB008 invalid state, MB009 log inconsistent.

COMMENT ON SCHEMA mbus IS 'pgmbus: queues, streams and timers inside PostgreSQL';

REVOKE ALL ON SCHEMA mbus FROM PUBLIC;

-- check_name(kind, name, max_length): return name when it follows the rule, else raise MB001.
-- The rule (the seed's): lower-case latin letters, digits and '_', starting with a letter, at
-- most max_length bytes so that every identifier derived from it fits in 63 bytes.
CREATE FUNCTION mbus.check_name(kind text, name text, max_length integer DEFAULT 32)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
BEGIN
    IF name IS NULL OR name = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB001',
            MESSAGE = format('%s name must not be empty', kind);
    END IF;
    IF name !~ '^[a-z][a-z0-9_]*$' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB001',
            MESSAGE = format('invalid %s name %L', kind, name),
            HINT = 'use lower-case latin letters a-z, digits 0-9 and _, starting with a letter';
    END IF;
    IF octet_length(name) > max_length THEN
        RAISE EXCEPTION USING ERRCODE = 'MB001',
            MESSAGE = format('%s name %L is too long (%s bytes, at most %s)',
                             kind, name, octet_length(name), max_length);
    END IF;
    RETURN name;
END;
$$;

CREATE TABLE mbus.settings (
    key         text PRIMARY KEY CHECK (key ~ '^[a-z][a-z0-9_.]*$'),
    value       jsonb NOT NULL,
    description text
);

COMMENT ON TABLE mbus.settings IS 'Configuration of the mbus engines (one row per setting).';

-- get_setting(key, fallback): the setting's value, or fallback when it is not set.
CREATE FUNCTION mbus.get_setting(key text, fallback jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT coalesce((SELECT s.value FROM mbus.settings AS s WHERE s.key = get_setting.key),
                    fallback);
$$;

-- set_setting(key, value): create or replace a setting.
CREATE FUNCTION mbus.set_setting(key text, value jsonb)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    INSERT INTO mbus.settings AS s (key, value) VALUES (set_setting.key, set_setting.value)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;
$$;

-- The functions meant to be executable by PUBLIC (text of their regprocedure, e.g.
-- 'mbus.get_iid(text)'); every other mbus function is not. Text, not regprocedure: pg_upgrade
-- refuses tables with reg* columns.
CREATE TABLE mbus.public_entry_point (
    signature text PRIMARY KEY CHECK (signature LIKE 'mbus.%(%)')
);

COMMENT ON TABLE mbus.public_entry_point IS
    'Functions of mbus that PUBLIC may execute; restrict_public_execute() enforces the list.';

-- restrict_public_execute(): make PUBLIC's EXECUTE on mbus functions match
-- mbus.public_entry_point (grant to the listed ones, revoke from all others). Every migration
-- ends by calling it, so a later migration cannot undo an earlier one's deliberate grants.
CREATE FUNCTION mbus.restrict_public_execute()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    f regprocedure;
    listed boolean;
BEGIN
    FOR f, listed IN
        SELECT p.oid::regprocedure,
               EXISTS (SELECT 1 FROM mbus.public_entry_point AS e
                       WHERE e.signature = p.oid::regprocedure::text)
        FROM pg_proc AS p
        WHERE p.pronamespace = 'mbus'::regnamespace AND p.prokind IN ('f', 'p')
    LOOP
        IF listed THEN
            EXECUTE format('GRANT EXECUTE ON ROUTINE %s TO PUBLIC', f);
        ELSE
            EXECUTE format('REVOKE EXECUTE ON ROUTINE %s FROM PUBLIC', f);
        END IF;
    END LOOP;
END;
$$;

SELECT mbus.restrict_public_execute();
