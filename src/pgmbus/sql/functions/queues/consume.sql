-- Function: mbus.consume(qname, cname, p_now)
--
-- Purpose:  Consume at most one message for a consumer (default: 'default'), transactional style:
--           the delivery is deleted, so it is gone when the caller's transaction commits and back
--           when it rolls back. Checks the names, then dispatches to the generated
--           consume_<qname>_by_<cname>: the oldest ready delivery (vt <= now, not expired, ordered
--           by vt, id) not locked by another consumer.
-- Params:   qname  the queue's name (text)
--           cname  the consumer's name (text; 'default' = the queue's own consumer)
--           p_now  the clock (NULL = clock_timestamp()); tests move it
-- Returns:  SETOF mbus.qt_model: one message, or no row when none is ready; MB001/MB002 for a bad
--           or unknown queue or consumer
-- Locks:    row lock FOR UPDATE SKIP LOCKED on the claimed delivery of mbus.q_<qname>, then its
--           DELETE, held to the caller's commit (ROW EXCLUSIVE on the segment, which makes
--           rotate_queue skip it meanwhile); deleting a delivery others depend on queues the
--           deferred dep_gone trigger (mbus.release_deps at commit)
-- Calls:    mbus.generated_name, mbus.require_consumer
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.consume(qname text, cname text DEFAULT 'default', p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1)',
                                mbus.generated_name('function', 'consume', qname, cname))
    USING p_now;
END;
$$;
