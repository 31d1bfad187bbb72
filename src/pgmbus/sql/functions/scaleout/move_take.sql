-- Function: mbus.move_take(queue, consumer, amt)
--
-- Purpose:  The sending half of one transfer of a queue move (pgmbus.scaleout.move):
--           mbus.transfer_take (the protocol it shares with routes) over consumer of queue, for
--           mbus.move_receive on the new server. The mover commits this transaction only after
--           the new server has committed the batch, whose iids it records: exactly once, as a
--           route.
-- Params:   queue     a queue of this database (text)
--           consumer  its consumer (text)
--           amt       the most messages to take (integer, > 0)
-- Returns:  jsonb array (empty when nothing is ready); MB001/MB002 for a bad or unknown queue
--           or consumer, MB006 for amt < 1
-- Locks:    those of mbus.consumen (row locks SKIP LOCKED, the DELETE of the claimed deliveries)
-- Calls:    mbus.transfer_take
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.move_take(queue text, consumer text, amt integer)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    RETURN mbus.transfer_take(queue, consumer, amt);
END;
$$;
