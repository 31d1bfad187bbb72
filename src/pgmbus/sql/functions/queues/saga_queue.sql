-- Function: mbus.saga_queue(qname)
--
-- Purpose:  saga_queue(qname): make one of the saga service queues unless it exists.
-- Params:   qname text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.saga_queue(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = saga_queue.qname) THEN
        PERFORM mbus.create_queue(qname, 1);
    END IF;
END;
$$;
