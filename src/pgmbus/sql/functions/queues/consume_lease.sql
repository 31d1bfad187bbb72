-- Function: mbus.consume_lease(qname, cname, amt, lease, max_attempts, p_now)
--
-- Purpose:  Claim at most amt messages for a consumer, lease style: the deliveries stay in the
--           table, invisible until now + lease, each with a new lease_token and attempts + 1; ack,
--           nack, extend or bury with the token end the lease, and a lease that runs out makes the
--           message claimable again (at-least-once). Checks the names, then dispatches to the
--           generated lease_<qname>_by_<cname>. A delivery already leased max_attempts times is
--           moved to mbus.dmq (reason 'max_attempts (n) exceeded') instead of being returned.
-- Params:   qname         the queue's name (text)
--           cname         the consumer's name (text)
--           amt           the most messages to claim (integer, >= 0; default 1)
--           lease         how long claimed messages stay invisible (interval, > 0; default 30 s)
--           max_attempts  past leases after which a delivery goes to the dmq (NULL = no limit)
--           p_now         the clock (NULL = clock_timestamp()); tests move it
-- Returns:  SETOF mbus.qt_model with lease_token and lease_until set; none when nothing is ready;
--           MB001/MB002 for a bad or unknown queue or consumer
-- Locks:    row locks FOR UPDATE SKIP LOCKED on the claimed deliveries of mbus.q_<qname>, then an
--           UPDATE of each (a DELETE plus an INSERT into mbus.dmq for the dead ones), held to
--           commit; in autocommit the lease, not a lock, keeps others off afterwards
-- Calls:    mbus.generated_name, mbus.require_consumer
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.consume_lease(qname text, cname text, amt integer DEFAULT 1,
                                   lease interval DEFAULT '30 seconds',
                                   max_attempts integer DEFAULT NULL,
                                   p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1, $2, $3, $4)',
                                mbus.generated_name('function', 'lease', qname, cname))
    USING amt, lease, max_attempts, p_now;
END;
$$;
