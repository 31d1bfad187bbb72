-- Function: mbus.saga_queue(qname)
--
-- Purpose:  Make one of the saga service queues (mbus_saga_bung, mbus_saga_final, mbus_saga_done)
--           unless it exists, so sagas need no setup step.
-- Params:   qname  the service queue's name (text)
-- Returns:  void
-- Locks:    those of mbus.create_queue when it makes the queue; none otherwise
-- Calls:    mbus.create_queue
-- Tables:   mbus.queue
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
