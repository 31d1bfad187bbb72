-- Function: mbus.extend(qname, token, lease, p_now)
--
-- Purpose:  Extend a lease: the leased delivery stays invisible until now + lease (the new end
--           replaces the old one, whether earlier or later). Checks the queue name, then dispatches
--           to the generated extend_<qname>. A handler that works longer than its lease calls it as
--           a heartbeat.
-- Params:   qname  the queue's name (text)
--           token  the lease_token a lease returned (uuid)
--           lease  the new lease length from now (interval, > 0; MB006 else)
--           p_now  the clock (NULL = clock_timestamp()); tests move it
-- Returns:  timestamptz: the lease's new end; MB001/MB002 for a bad or unknown queue, MB007 when
--           the lease is no longer held
-- Locks:    row lock of the leased delivery in mbus.q_<qname> (UPDATE), held to commit; waits for a
--           transaction that holds that row
-- Calls:    mbus.generated_name, mbus.require_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.extend(qname text, token uuid, lease interval, p_now timestamptz DEFAULT NULL)
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_end timestamptz;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, $3)',
                   mbus.generated_name('function', 'extend', qname))
    INTO v_end USING token, lease, p_now;
    RETURN v_end;
END;
$$;
