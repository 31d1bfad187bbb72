-- Function: mbus.on_dep_gone()
--
-- Purpose:  The deferred trigger of delivery tables (argument: the queue name) and of the dmq.
-- Params:   none
-- Returns:  trigger
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.on_dep_gone()
RETURNS trigger
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_TABLE_NAME = 'dmq' THEN
        PERFORM mbus.release_deps(OLD.iid);
    ELSE
        PERFORM mbus.release_deps(coalesce(OLD.iid, TG_ARGV[0] || '.' || OLD.id || '@' || current_database()));
    END IF;
    RETURN NULL;
END;
$$;

-- The dead-message queue's binding: a dependency sitting in the dmq keeps blocking, and its
-- deletion from there releases its waiters like a consume does. Constraint triggers have no
-- OR REPLACE, so the binding is made anew.
DROP TRIGGER IF EXISTS dmq_dep_gone ON mbus.dmq;
CREATE CONSTRAINT TRIGGER dmq_dep_gone AFTER DELETE ON mbus.dmq
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION mbus.on_dep_gone();
