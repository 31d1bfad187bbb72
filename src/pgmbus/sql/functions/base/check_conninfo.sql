-- Function: mbus.check_conninfo(kind, name, conninfo)
--
-- Purpose:  The rule for a conninfo stored in a table (a link's, a server's): not empty, and no
--           password in any of the forms libpq reads one from (a 'password=' keyword, the
--           user:password@ part of a URI, a '?password=' or '&password=' URI parameter). The
--           process that connects finds the password in its ~/.pgpass, PGPASSFILE or service
--           file, so no secret is stored in a table or printed in a log. The one place this
--           rule is written, so every function that stores a conninfo refuses the same things.
-- Params:   kind      what the conninfo belongs to ('link', 'server'), used in the message
--           name      its name, used in the message
--           conninfo  the conninfo to check (text)
-- Returns:  conninfo, unchanged; raises MB006 for a NULL or blank conninfo or one that holds a
--           password
-- Locks:    none
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.check_conninfo(kind text, name text, conninfo text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
BEGIN
    IF conninfo IS NULL OR btrim(conninfo) = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('a %s needs a conninfo', kind);
    END IF;
    IF conninfo ~* '(^|[[:space:]])password[[:space:]]*='
       OR conninfo ~* '^postgres(ql)?://[^/@]*:[^/@]*@' OR conninfo ~* '[?&]password=' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('the conninfo of %s %L must not hold a password', kind, name),
            HINT = 'put the password in ~/.pgpass (or PGPASSFILE) of the process that connects, '
                   'or use a service';
    END IF;
    RETURN conninfo;
END;
$$;
