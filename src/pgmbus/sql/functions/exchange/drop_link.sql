-- Function: mbus.drop_link(name)
--
-- Purpose:  Forget a link. Refused while a route uses it: drop the routes first (their
--           consumers hold the messages not yet forwarded).
-- Params:   name  the link's name (text)
-- Returns:  void; MB001/MB002 for a bad or unknown link, MB008 while routes use it
-- Locks:    a row delete from mbus.exchange_link
-- Calls:    mbus.check_name
-- Tables:   mbus.exchange_link, mbus.exchange_route
CREATE OR REPLACE FUNCTION mbus.drop_link(name text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_routes text;
BEGIN
    PERFORM mbus.check_name('link', name, 32);
    IF NOT EXISTS (SELECT 1 FROM mbus.exchange_link AS l WHERE l.name = drop_link.name) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('link %L does not exist', name);
    END IF;
    SELECT string_agg(r.name, ', ' ORDER BY r.name) INTO v_routes
    FROM mbus.exchange_route AS r WHERE r.link = drop_link.name;
    IF v_routes IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('link %L is used by routes %s; drop them first', name, v_routes);
    END IF;
    DELETE FROM mbus.exchange_link AS l WHERE l.name = drop_link.name;
END;
$$;
