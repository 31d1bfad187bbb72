-- Function: mbus.await_queue(qname)
--
-- Purpose:  LISTEN on mbus_q_<qname> and register this session as waiting for posts to qname; the
--           generated posts NOTIFY only while some session is registered, so posting to a queue
--           nobody waits on costs no NOTIFY (whose commit-time lock is global). Call it in a
--           transaction of its own, before the last look at the queue, so no post slips in between.
--           Entries of sessions that are gone are removed on the way. The table is unlogged, so
--           this commit writes no WAL and does not wait for a disk flush.
-- Params:   qname  the queue's name (text)
-- Returns:  void; MB001/MB002 for a bad or unknown queue
-- Locks:    row locks on mbus.queue_waiter rows (DELETE of dead sessions' entries, upsert of its
--           own)
-- Calls:    mbus.require_queue
-- Tables:   mbus.queue_waiter
CREATE OR REPLACE FUNCTION mbus.await_queue(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('LISTEN %I', 'mbus_q_' || qname);
    -- pg_stat_get_activity(pid) reads one backend's entry; pg_stat_activity would read all.
    DELETE FROM mbus.queue_waiter AS w
    WHERE w.qname = await_queue.qname AND w.pid <> pg_backend_pid()
      AND NOT EXISTS (SELECT 1 FROM pg_stat_get_activity(w.pid) AS a);
    INSERT INTO mbus.queue_waiter (qname, pid) VALUES (qname, pg_backend_pid())
    ON CONFLICT ON CONSTRAINT queue_waiter_pkey DO UPDATE SET since = now();
END;
$$;
