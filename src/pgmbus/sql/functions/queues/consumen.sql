-- Function: mbus.consumen(qname, cname, amt, p_now)
--
-- Purpose:  Consume at most amt messages for a consumer, transactional style (deleted, gone at the
--           caller's commit). Checks the names, then dispatches to the generated
--           consumen_<qname>_by_<cname>: the amt oldest ready deliveries (vt <= now, not expired)
--           that no other transaction holds, returned in claim order (vt, id).
-- Params:   qname  the queue's name (text)
--           cname  the consumer's name (text)
--           amt    the most messages to return (integer, >= 0; MB006 else)
--           p_now  the clock (NULL = clock_timestamp()); tests move it
-- Returns:  SETOF mbus.qt_model: up to amt messages, none when none is ready; MB001/MB002 for a bad
--           or unknown queue or consumer
-- Locks:    row locks FOR UPDATE SKIP LOCKED on the claimed deliveries of mbus.q_<qname>, then
--           their DELETE, held to the caller's commit; deleting a delivery others depend on queues
--           the deferred dep_gone trigger (mbus.release_deps at commit)
-- Calls:    mbus.generated_name, mbus.require_consumer
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.consumen(qname text, cname text, amt integer, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1, $2)',
                                mbus.generated_name('function', 'consumen', qname, cname))
    USING amt, p_now;
END;
$$;
