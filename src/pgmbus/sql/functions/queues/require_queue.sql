-- Function: mbus.require_queue(qname)
--
-- Purpose:  Check a queue name before it becomes part of a generated function's name: raise MB001
--           for a name against the rule (mbus.check_name, at most 24 bytes) and MB002 when the
--           queue does not exist. Every generic entry point calls it first, so a bad name never
--           reaches format('%I').
-- Params:   qname  the queue's name (text)
-- Returns:  void; raises MB001 or MB002
-- Locks:    none (reads mbus.queue)
-- Calls:    mbus.check_name
-- Tables:   mbus.queue
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
