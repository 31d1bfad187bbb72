-- Function: mbus.move_take(queue, consumer, amt)
--
-- Purpose:  The sending half of one transfer of a queue move (pgmbus.scaleout.move): consume
--           (mbus.consumen, transactional style) at most amt ready deliveries of consumer of
--           queue and return them as mbus.exchange_take does, for mbus.exchange_receive on the
--           new server. The mover commits this transaction only after the new server has
--           committed the batch, whose iids it records: exactly once, as a route.
-- Params:   queue     a queue of this database (text)
--           consumer  its consumer (text)
--           amt       the most messages to take (integer, > 0)
-- Returns:  jsonb array (empty when nothing is ready); MB001/MB002 for a bad or unknown queue
--           or consumer, MB006 for amt < 1
-- Locks:    those of mbus.consumen (row locks SKIP LOCKED, the DELETE of the claimed deliveries)
-- Callers:  pgmbus.scaleout.move via sql/scaleout.sql 'take'; tests tests/scaleout
CREATE OR REPLACE FUNCTION mbus.move_take(queue text, consumer text, amt integer)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_out jsonb;
BEGIN
    IF amt IS NULL OR amt < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('amt must be >= 1, not %s', amt);
    END IF;
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'iid', m.iid, 'data', m.data, 'headers', m.headers, 'properties', m.properties,
               'delayed_until', m.delayed_until, 'expires', m.expires) ORDER BY m.ordinality), '[]')
    INTO v_out
    FROM mbus.consumen(queue, consumer, amt) WITH ORDINALITY AS m;
    RETURN v_out;
END;
$$;
