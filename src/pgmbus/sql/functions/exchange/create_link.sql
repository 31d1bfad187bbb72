-- Function: mbus.create_link(name, conninfo)
--
-- Purpose:  Declare another database this one may forward messages to. The conninfo
--           is what libpq accepts ('service=orders_eu', 'host=... port=... dbname=... user=...',
--           or a postgresql:// URI) and must carry no password: the mover (`pgmbus bridge`)
--           finds it in its ~/.pgpass, PGPASSFILE or the service file, so that no secret is
--           stored in a table or printed in a log. The database at the other end needs the mbus
--           schema with the exchange functions (mbus.exchange_receive).
-- Params:   name      the link's name (the name rule, at most 32 bytes)
--           conninfo  how to reach the other database (text, no password)
-- Returns:  void; MB001 for a bad name, MB003 when the link exists, MB006 for an empty conninfo
--           or one that holds a password
-- Locks:    a row insert into mbus.exchange_link
-- Calls:    mbus.check_conninfo, mbus.check_name
-- Tables:   mbus.exchange_link
CREATE OR REPLACE FUNCTION mbus.create_link(name text, conninfo text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.check_name('link', name, 32);
    PERFORM mbus.check_conninfo('link', name, conninfo);
    IF EXISTS (SELECT 1 FROM mbus.exchange_link AS l WHERE l.name = create_link.name) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003', MESSAGE = format('link %L exists already', name);
    END IF;
    INSERT INTO mbus.exchange_link (name, conninfo) VALUES (name, conninfo);
END;
$$;
