-- Function: mbus.drop_route(name)
--
-- Purpose:  Stop forwarding: drops the route and its consumer 'xr_<name>' with the messages it
--           had not forwarded yet (they stay for the queue's other consumers). A mover running
--           the route stops it at its next batch (MB002).
-- Params:   name  the route's name (text)
-- Returns:  void; MB001/MB002 for a bad or unknown route
-- Locks:    those of mbus.drop_consumer (waits for a batch the mover holds); a row delete from
--           mbus.exchange_route
-- Calls:    mbus.check_name, mbus.drop_consumer
-- Tables:   mbus.consumer, mbus.exchange_route
CREATE OR REPLACE FUNCTION mbus.drop_route(name text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    r mbus.exchange_route;
BEGIN
    PERFORM mbus.check_name('route', name, 21);
    SELECT * INTO r FROM mbus.exchange_route AS x WHERE x.name = drop_route.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('route %L does not exist', name);
    END IF;
    DELETE FROM mbus.exchange_route AS x WHERE x.name = drop_route.name;
    IF EXISTS (SELECT 1 FROM mbus.consumer AS c WHERE c.qname = r.src_queue AND c.cname = r.cname) THEN
        PERFORM mbus.drop_consumer(r.src_queue, r.cname);
    END IF;
END;
$$;
