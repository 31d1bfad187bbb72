-- Function: mbus.require_consumer(qname, cname)
--
-- Purpose:  require_consumer(qname, cname): MB001/MB002 like require_queue, for a consumer of qname.
-- Params:   qname text FILL
--           cname text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.require_consumer(qname text, cname text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    PERFORM mbus.check_name('consumer', cname, 24);
    IF NOT EXISTS (SELECT 1 FROM mbus.consumer AS c
                   WHERE c.qname = require_consumer.qname AND c.cname = require_consumer.cname) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('consumer %L of queue %L does not exist', cname, qname);
    END IF;
END;
$$;
