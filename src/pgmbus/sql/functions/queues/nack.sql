-- Function: mbus.nack(qname, token, delay, p_now)
--
-- Purpose:  Give a leased message back: its delivery becomes claimable again after delay (0: at
--           once) and its lease ends. Checks the queue name, then dispatches to the generated
--           nack_<qname>, which sets vt = now + delay and clears lease_token on the delivery the
--           token still holds. The attempts count is kept, so max_attempts of the next lease still
--           counts this delivery.
-- Params:   qname  the queue's name (text)
--           token  the lease_token a lease returned (uuid)
--           delay  how long the message stays invisible (interval, >= 0; MB006 else)
--           p_now  the clock (NULL = clock_timestamp()); tests move it
-- Returns:  void; MB001/MB002 for a bad or unknown queue, MB007 when the lease is no longer held
-- Locks:    row lock of the leased delivery in mbus.q_<qname> (UPDATE), held to commit; waits for a
--           transaction that holds that row
-- Calls:    mbus.generated_name, mbus.require_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.nack(qname text, token uuid, delay interval DEFAULT '0'::interval,
                          p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, $3)',
                   mbus.generated_name('function', 'nack', qname)) USING token, delay, p_now;
END;
$$;
