-- Function: mbus.consumer_role(qname, cname, make)
--
-- Purpose:  consumer_role(qname, cname, create): make or drop the consume role of a consumer.
-- Params:   qname text FILL
--           cname text FILL
--           make boolean FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.consumer_role(qname text, cname text, make boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    IF make THEN
        PERFORM mbus.ensure_role(mbus.queue_role('consume', qname, cname),
                                 (SELECT q.roles_security FROM mbus.queue AS q
                                  WHERE q.qname = consumer_role.qname));
    ELSE
        PERFORM mbus.drop_role(mbus.queue_role('consume', qname, cname));
        DELETE FROM mbus.temp_object AS t
        WHERE t.kind = 'consumer' AND t.qname = consumer_role.qname AND t.cname = consumer_role.cname;
    END IF;
END;
$$;
