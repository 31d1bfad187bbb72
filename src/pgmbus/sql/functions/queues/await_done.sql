-- Function: mbus.await_done(qname)
--
-- Purpose:  await_done(qname): this session no longer waits for posts to qname (and stops listening).
-- Params:   qname text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
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
