-- Function: mbus.check_name(kind, name, max_length)
--
-- Purpose:  check_name(kind, name, max_length): return name when it follows the rule, else raise MB001.
--           The rule (the seed's): lower-case latin letters, digits and '_', starting with a letter, at
--           most max_length bytes so that every identifier derived from it fits in 63 bytes.
-- Params:   kind text FILL
--           name text FILL
--           max_length integer DEFAULT 32 FILL
-- Returns:  text
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.check_name(kind text, name text, max_length integer DEFAULT 32)
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
