-- Function: mbus.queue_created(qname)
--
-- Purpose:  queue_created(qname): what part two adds to a new queue: the dependency trigger and roles.
-- Params:   qname text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.queue_created(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    EXECUTE format('CREATE CONSTRAINT TRIGGER dep_gone AFTER DELETE ON mbus.%I '
                   'DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (OLD.waited) '
                   'EXECUTE FUNCTION mbus.on_dep_gone(%L)', 'q_' || qname, qname);
    PERFORM mbus.ensure_role(mbus.queue_role('post', qname),
                             (SELECT q.roles_security FROM mbus.queue AS q
                              WHERE q.qname = queue_created.qname));
    PERFORM mbus.consumer_role(qname, 'default', true);
END;
$$;
