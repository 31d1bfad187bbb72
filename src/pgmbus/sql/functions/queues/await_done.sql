-- Function: mbus.await_done(qname)
--
-- Purpose:  This session no longer waits for posts to qname: removes its mbus.queue_waiter entry
--           and stops listening. No queue check, so it works after the queue was dropped;
--           MB001 for a name that breaks the rule (NULL included).
-- Params:   qname  the queue's name (text)
-- Returns:  void
-- Locks:    row lock on this session's mbus.queue_waiter row (DELETE)
-- Calls:    mbus.check_name
-- Tables:   mbus.queue_waiter
CREATE OR REPLACE FUNCTION mbus.await_done(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    -- the name's form only (MB001; a NULL failed in format's %I): the queue may be gone
    PERFORM mbus.check_name('queue', qname, 24);
    DELETE FROM mbus.queue_waiter AS w
    WHERE w.qname = await_done.qname AND w.pid = pg_backend_pid();
    EXECUTE format('UNLISTEN %I', 'mbus_q_' || qname);
END;
$$;
