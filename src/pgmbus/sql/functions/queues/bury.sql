-- Function: mbus.bury(qname, token, reason, p_now)
--
-- Purpose:  Move a leased message to the dead-message queue: the generated bury_<qname> deletes the
--           delivery the token still holds and inserts it into mbus.dmq in one statement, with the
--           consumer's name, its attempts and reason (NULL = 'buried'). The iid is kept, so
--           mbus.dmq_replay can put it back, and messages that depend on it keep waiting while it
--           is dead.
-- Params:   qname   the queue's name (text)
--           token   the lease_token a lease returned (uuid)
--           reason  why the message is dead (text; NULL = 'buried')
--           p_now   the clock (NULL = clock_timestamp()); tests move it
-- Returns:  bigint: the new mbus.dmq row's dmq_id; MB001/MB002 for a bad or unknown queue, MB007
--           when the lease is no longer held
-- Locks:    row lock of the leased delivery in mbus.q_<qname> (DELETE), held to commit; waits for a
--           transaction that holds that row; inserts into mbus.dmq
-- Calls:    mbus.generated_name, mbus.require_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.bury(qname text, token uuid, reason text, p_now timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_id bigint;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, $3)',
                   mbus.generated_name('function', 'bury', qname))
    INTO v_id USING token, reason, p_now;
    RETURN v_id;
END;
$$;
