-- Function: mbus.drop_consumer(qname, cname)
--
-- Purpose:  Drop a consumer: its row, its pending deliveries, its generated functions and its role;
--           the queue's functions are regenerated without it. Messages it did not consume are lost
--           for it (other consumers keep theirs).
-- Params:   qname  the queue's name (text)
--           cname  the consumer's name (text)
-- Returns:  void; MB001/MB002 for a bad or unknown queue or consumer
-- Locks:    pg_advisory_xact_lock(1835165041) (serializes every catalog change of queues:
--           create/drop of queues, consumers, triggers, clear_tempq); row locks of the consumer's
--           deliveries (DELETE), waiting for claims in progress; DROP FUNCTION of its four
--           functions; DROP OWNED / DROP ROLE of its role
-- Callers:  mbus.clear_tempq; pgmbus.queues Bus.drop_consumer / AsyncBus.drop_consumer via
--           sql/queues.sql 'drop_consumer'; tests under tests/queues
CREATE OR REPLACE FUNCTION mbus.drop_consumer(qname text, cname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_cid integer;
    f     text;
BEGIN
    PERFORM pg_advisory_xact_lock(1835165041);
    PERFORM mbus.require_consumer(qname, cname);
    DELETE FROM mbus.consumer AS c
    WHERE c.qname = drop_consumer.qname AND c.cname = drop_consumer.cname
    RETURNING c.cid INTO v_cid;
    EXECUTE format('DELETE FROM mbus.%I WHERE c = $1', 'q_' || qname) USING v_cid;
    FOREACH f IN ARRAY mbus.consumer_functions(qname, cname) LOOP
        EXECUTE format('DROP FUNCTION IF EXISTS mbus.%I', f);
    END LOOP;
    PERFORM mbus.consumer_role(qname, cname, false);
    PERFORM mbus.regenerate_queue(qname);
END;
$$;
