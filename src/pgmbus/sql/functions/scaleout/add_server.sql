-- Function: mbus.add_server(name, conninfo)
--
-- Purpose:  Add a server to the placement map of a bus spread over several PostgreSQL servers
--           (docs/scale-out.md). The conninfo must carry no password
--           (clients find it in ~/.pgpass, PGPASSFILE or a service file).
-- Params:   name      the server's name in the map (the name rule, at most 32 bytes)
--           conninfo  how to reach the server's database (text, no password)
-- Returns:  void; MB001 for a bad name, MB003 when the server is in the map already, MB006 for
--           an empty conninfo or one that holds a password
-- Locks:    a row insert into mbus.placement_server
-- Calls:    mbus.check_conninfo, mbus.check_name
-- Tables:   mbus.placement_server
CREATE OR REPLACE FUNCTION mbus.add_server(name text, conninfo text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.check_name('server', name, 32);
    PERFORM mbus.check_conninfo('server', name, conninfo);
    IF EXISTS (SELECT 1 FROM mbus.placement_server AS s WHERE s.name = add_server.name) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003', MESSAGE = format('server %L exists already', name);
    END IF;
    INSERT INTO mbus.placement_server (name, conninfo) VALUES (name, conninfo);
END;
$$;
