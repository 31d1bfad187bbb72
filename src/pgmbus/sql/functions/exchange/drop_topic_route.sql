-- Function: mbus.drop_topic_route(name)
--
-- Purpose:  Stop forwarding a topic: delete the route and its stream group 'xt_<name>' (events
--           not yet moved stay in the log, unforwarded).
-- Params:   name  the route's name (text)
-- Returns:  void; MB001 for a bad name, MB002 for an unknown route
-- Locks:    those of mbus.drop_group; a row delete from mbus.exchange_topic_route
-- Calls:    mbus.check_name, mbus.drop_group
-- Tables:   mbus.exchange_topic_route
CREATE OR REPLACE FUNCTION mbus.drop_topic_route(name text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_grp text;
BEGIN
    PERFORM mbus.check_name('route', name, 45);
    DELETE FROM mbus.exchange_topic_route AS r WHERE r.name = drop_topic_route.name
    RETURNING r.grp INTO v_grp;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('route %L does not exist', name);
    END IF;
    PERFORM mbus.drop_group(v_grp);
END;
$$;
