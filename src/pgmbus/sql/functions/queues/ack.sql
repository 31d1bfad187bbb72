-- Function: mbus.ack(qname, token, p_now)
--
-- Purpose:  Acknowledge a leased message: it is done and its delivery is deleted. Checks the queue
--           name, then dispatches to the generated ack_<qname> (one EXECUTE), which deletes the
--           delivery whose lease_token is token while the lease still runs (vt > now). A lease that
--           expired, was acked, nacked or buried already, or was taken over by a later lease raises
--           MB007, so a handler that overran its lease learns it lost the message.
-- Params:   qname  the queue's name (text)
--           token  the lease_token a lease (consume_lease) returned (uuid)
--           p_now  the clock (NULL = clock_timestamp()); tests move it
-- Returns:  void; MB001/MB002 for a bad or unknown queue, MB007 when the lease is no longer held
-- Locks:    row lock of the leased delivery in mbus.q_<qname> (DELETE), held to commit; waits for a
--           transaction that holds that row. Deleting a delivery others depend on (waited) queues
--           the deferred dep_gone trigger (mbus.release_deps at commit)
-- Calls:    mbus.generated_name, mbus.require_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.ack(qname text, token uuid, p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2)',
                   mbus.generated_name('function', 'ack', qname)) USING token, p_now;
END;
$$;
