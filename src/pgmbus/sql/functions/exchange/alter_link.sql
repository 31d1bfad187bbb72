-- Function: mbus.alter_link(name, conninfo)
--
-- Purpose:  Point a link at a new address (the other database moved: a new host, port or
--           service), keeping its routes and the messages their consumers hold. The same rules
--           as mbus.create_link: no password in the conninfo. A running mover picks the new
--           conninfo up when it next reads the routes (every few seconds).
-- Params:   name      the link's name (text)
--           conninfo  how to reach the other database now (text, no password)
-- Returns:  void; MB001/MB002 for a bad or unknown link, MB006 for an empty conninfo or one that
--           holds a password
-- Locks:    a row update of mbus.exchange_link
-- Calls:    mbus.check_conninfo, mbus.check_name
-- Tables:   mbus.exchange_link
CREATE OR REPLACE FUNCTION mbus.alter_link(name text, conninfo text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.check_name('link', name, 32);
    PERFORM mbus.check_conninfo('link', name, conninfo);
    UPDATE mbus.exchange_link AS l SET conninfo = alter_link.conninfo
    WHERE l.name = alter_link.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('link %L does not exist', name);
    END IF;
END;
$$;
