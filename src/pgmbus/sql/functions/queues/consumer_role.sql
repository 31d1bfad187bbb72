-- Function: mbus.consumer_role(qname, cname, make)
--
-- Purpose:  Make (make = true) or drop the consume role of a consumer; strict when the queue uses
--           the roles security model. Dropping also removes the consumer's temporary-object entry.
-- Params:   qname  the queue's name (text)
--           cname  the consumer's name (text)
--           make   true: make the role; false: drop it (boolean)
-- Returns:  void
-- Locks:    those of mbus.ensure_role or mbus.drop_role; DELETE of a mbus.temp_object row
-- Calls:    mbus.drop_role, mbus.ensure_role, mbus.queue_role
-- Tables:   mbus.queue, mbus.temp_object
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
