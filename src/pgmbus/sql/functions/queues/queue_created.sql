-- Function: mbus.queue_created(qname)
--
-- Purpose:  What a new queue gets besides its table: the deferred constraint trigger dep_gone on
--           mbus.q_<qname> (WHEN OLD.waited, so only deliveries others depend on queue an event;
--           mbus.on_dep_gone releases the dependants at commit), the post role and the consume role
--           of its consumer 'default'.
-- Params:   qname  the queue's name (text)
-- Returns:  void
-- Locks:    CREATE CONSTRAINT TRIGGER on the new table (nobody else holds it); ensure_role's
-- Calls:    mbus.consumer_role, mbus.ensure_role, mbus.generated_name, mbus.on_dep_gone,
--           mbus.queue_role
-- Tables:   mbus.queue
CREATE OR REPLACE FUNCTION mbus.queue_created(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    EXECUTE format('CREATE CONSTRAINT TRIGGER dep_gone AFTER DELETE ON mbus.%I '
                   'DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (OLD.waited) '
                   'EXECUTE FUNCTION mbus.on_dep_gone(%L)',
                       mbus.generated_name('relation', 'table', qname), qname);
    PERFORM mbus.ensure_role(mbus.queue_role('post', qname),
                             (SELECT q.roles_security FROM mbus.queue AS q
                              WHERE q.qname = queue_created.qname));
    PERFORM mbus.consumer_role(qname, 'default', true);
END;
$$;
