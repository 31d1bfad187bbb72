-- Function: mbus.check_name(kind, name, max_length)
--
-- Purpose:  The naming rule of queues, consumers, groups and the like (the original mbus API's):
--           lower-case latin letters, digits and '_', starting with a letter, at most
--           max_length bytes, so that every identifier derived from a name (tables, generated
--           functions, roles) fits in PostgreSQL's 63 bytes. Returns the name unchanged when it
--           follows the rule, so callers can write check_name('queue', qname) inline.
-- Params:   kind        what is named ('queue', 'consumer', 'group', ...), used in the message
--           name        the name to check
--           max_length  the longest name allowed, in bytes (32 unless the caller says)
-- Returns:  name, unchanged; raises MB001 (empty, bad characters, too long) otherwise
-- Locks:    none
-- Calls:    none
-- Tables:   none
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
