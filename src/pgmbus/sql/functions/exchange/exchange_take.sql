-- Function: mbus.exchange_take(route, amt)
--
-- Purpose:  The sending half of one transfer: consume (transactional style, mbus.consumen) at
--           most amt messages of the route's consumer 'xr_<route>', in claim order, and return
--           them as one jsonb array for mbus.exchange_receive on the destination. The mover
--           keeps this transaction open until the destination has committed, then commits it:
--           a crash before leaves the messages in place (the transaction rolls back), and the
--           re-sent batch is recognised there by its iids. Each element is
--           {iid, data, headers, properties, delayed_until, expires}; headers always carry
--           seenby and source_db (the defaults of a message posted without headers are filled).
-- Params:   route  the route's name (text)
--           amt    the most messages to take (integer, > 0)
-- Returns:  jsonb: the array (empty when nothing is ready); MB001/MB002 for a bad or unknown
--           route, MB006 for amt < 1
-- Locks:    those of consumen_<q>_by_xr_<route>: row locks FOR UPDATE SKIP LOCKED and the
--           DELETE of the claimed deliveries of mbus.q_<src_queue>, held to commit
-- Callers:  pgmbus.exchange.bridge (the mover) via sql/exchange.sql 'take'; tests tests/exchange
CREATE OR REPLACE FUNCTION mbus.exchange_take(route text, amt integer)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    r     mbus.exchange_route;
    v_out jsonb;
BEGIN
    PERFORM mbus.check_name('route', route, 21);
    IF amt IS NULL OR amt < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('amt must be >= 1, not %s', amt);
    END IF;
    SELECT * INTO r FROM mbus.exchange_route AS x WHERE x.name = route;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('route %L does not exist', route);
    END IF;
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'iid', m.iid, 'data', m.data, 'headers', m.headers, 'properties', m.properties,
               'delayed_until', m.delayed_until, 'expires', m.expires) ORDER BY m.ordinality), '[]')
    INTO v_out
    FROM mbus.consumen(r.src_queue, r.cname, amt) WITH ORDINALITY AS m;
    RETURN v_out;
END;
$$;
