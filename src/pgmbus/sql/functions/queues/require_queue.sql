-- Function: mbus.require_queue(qname)
--
-- Purpose:  require_queue(qname): raise MB001 for a bad name, MB002 when the queue does not exist.
-- Params:   qname text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.require_queue(qname text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.check_name('queue', qname, 24);
    IF NOT EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = require_queue.qname) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('queue %L does not exist', qname);
    END IF;
END;
$$;
