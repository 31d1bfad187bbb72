-- Function: mbus.take(iid)
--
-- Purpose:  Take the message with that iid away from the queue its iid names, for every consumer:
--           the generated take_<queue> deletes all its unexpired deliveries. It waits while another
--           transaction holds one of them (a plain DELETE, no SKIP LOCKED); a delivery a consumer
--           claimed and committed is gone and not taken. The queue comes from the iid
--           ('<qname>.<n>@<database>'): a message posted to another queue with an iid of this one
--           is not found, as the original mbus API warns.
-- Params:   iid  the message's iid (text; MB006 when it is not an mbus iid)
-- Returns:  SETOF mbus.qt_model: the message (one row however many consumers had it), or no row
--           when it is not there or its queue does not exist
-- Locks:    row locks of the message's deliveries in mbus.q_<queue> (DELETE), held to commit; waits
--           for transactions that hold them; deleting deliveries others depend on queues the
--           deferred dep_gone trigger (mbus.release_deps at commit)
-- Calls:    mbus.generated_name, mbus.queue_of_iid
-- Tables:   mbus.queue
CREATE OR REPLACE FUNCTION mbus.take(iid text)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q text := mbus.queue_of_iid(iid);
BEGIN
    IF v_q IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('%L is not an mbus iid', iid);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = v_q) THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1)',
                                mbus.generated_name('function', 'take', v_q)) USING iid;
END;
$$;
