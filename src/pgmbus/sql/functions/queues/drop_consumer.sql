-- Function: mbus.drop_consumer(qname, cname)
--
-- Purpose:  drop_consumer(qname, cname): drop the consumer, its pending deliveries and its functions.
-- Params:   qname text FILL
--           cname text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
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
