-- Function: mbus.clear_queue(qname, p_now)
--
-- Purpose:  Delete the queue's expired deliveries (expires <= now), for every consumer, now (with
--           p_now, as of that time). Expired deliveries are never claimed; mbus.rotate_queue, the
--           storage upkeep, deletes them too, so this is needed only where no upkeep runs. Checks
--           the queue name, then dispatches to the generated clear_queue_<qname>.
-- Params:   qname  the queue's name (text)
--           p_now  the clock (NULL = clock_timestamp()); tests move it
-- Returns:  bigint: how many deliveries were deleted; MB001/MB002 for a bad or unknown queue
-- Locks:    row locks of the expired deliveries in mbus.q_<qname> (DELETE), held to commit; waits
--           for transactions that hold any of them
-- Calls:    mbus.generated_name, mbus.require_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.clear_queue(qname text, p_now timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v bigint;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1)',
                   mbus.generated_name('function', 'clear_queue', qname)) INTO v USING p_now;
    RETURN v;
END;
$$;
