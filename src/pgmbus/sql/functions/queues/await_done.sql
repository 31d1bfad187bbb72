-- Function: mbus.await_done(qname)
--
-- Purpose:  This session no longer waits for posts to qname: removes its mbus.queue_waiter entry
--           and stops listening. No queue check, so it works after the queue was dropped.
-- Params:   qname  the queue's name (text)
-- Returns:  void
-- Locks:    row lock on this session's mbus.queue_waiter row (DELETE)
-- Callers:  pgmbus.queues Bus._listening / AsyncBus._listening via sql/queues.sql 'await_done';
--           tests tests/queues/test_queues_concurrency.py
CREATE OR REPLACE FUNCTION mbus.await_done(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    DELETE FROM mbus.queue_waiter AS w
    WHERE w.qname = await_done.qname AND w.pid = pg_backend_pid();
    EXECUTE format('UNLISTEN %I', 'mbus_q_' || qname);
END;
$$;
