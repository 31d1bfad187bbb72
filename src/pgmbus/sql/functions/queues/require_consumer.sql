-- Function: mbus.require_consumer(qname, cname)
--
-- Purpose:  Check a queue and consumer name pair: MB001/MB002 like mbus.require_queue for the
--           queue, MB001 for a consumer name against the rule (at most 24 bytes), MB002 when qname
--           has no consumer cname.
-- Params:   qname  the queue's name (text)
--           cname  the consumer's name (text)
-- Returns:  void; raises MB001 or MB002
-- Locks:    none (reads mbus.queue, mbus.consumer)
-- Calls:    mbus.check_name, mbus.require_queue
-- Tables:   mbus.consumer
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
