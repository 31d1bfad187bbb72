-- Function: mbus.on_dep_gone()
--
-- Purpose:  The deferred constraint trigger function of the delivery tables (TG_ARGV[0]: the queue
--           name) and of mbus.dmq: at commit of a transaction that deleted a delivery others depend
--           on (waited), or a dmq row, calls mbus.release_deps with its iid (the queue's own iid
--           rebuilt from the id when not stored). This file also binds it to mbus.dmq
--           (dmq_dep_gone): a dependency sitting in the dmq keeps blocking, and its deletion from
--           there releases its waiters like a consume does. Constraint triggers have no OR REPLACE,
--           so the binding is dropped and made anew (briefly ACCESS EXCLUSIVE on mbus.dmq at
--           install).
-- Params:   none (a trigger; TG_ARGV[0] is the queue name on delivery tables)
-- Returns:  trigger: NULL (an AFTER trigger)
-- Locks:    those of mbus.release_deps
-- Calls:    mbus.on_dep_gone, mbus.release_deps
-- Tables:   mbus.dmq
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
