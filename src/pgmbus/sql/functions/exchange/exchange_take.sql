-- Function: mbus.exchange_take(route, amt)
--
-- Purpose:  The sending half of one transfer of a route: mbus.transfer_take (the protocol it
--           shares with queue moves) over the route's consumer 'xr_<route>', for
--           mbus.exchange_receive on the destination. The mover keeps this transaction open
--           until the destination has committed, then commits it.
-- Params:   route  the route's name (text)
--           amt    the most messages to take (integer, > 0)
-- Returns:  jsonb: the array (empty when nothing is ready); MB001/MB002 for a bad or unknown
--           route, MB006 for amt < 1
-- Locks:    those of consumen_<q>_by_xr_<route>: row locks FOR UPDATE SKIP LOCKED and the
--           DELETE of the claimed deliveries of mbus.q_<src_queue>, held to commit
-- Calls:    mbus.check_name, mbus.transfer_take
-- Tables:   mbus.exchange_route
CREATE OR REPLACE FUNCTION mbus.exchange_take(route text, amt integer)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    r mbus.exchange_route;
BEGIN
    PERFORM mbus.check_name('route', route, 21);
    SELECT * INTO r FROM mbus.exchange_route AS x WHERE x.name = route;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('route %L does not exist', route);
    END IF;
    RETURN mbus.transfer_take(r.src_queue, r.cname, amt);
END;
$$;
