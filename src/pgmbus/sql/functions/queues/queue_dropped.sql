-- Function: mbus.queue_dropped(qname)
--
-- Purpose:  After the queue's table went: its waiting messages are forgotten (their msg_dep and
--           msg_wait rows), messages of other queues waiting on its messages are released
--           (mbus.release_deps; not those whose dependency sits in the dmq), its post role is
--           dropped.
-- Params:   qname  the queue's name (text)
-- Returns:  void; MB008 from release_deps outside READ COMMITTED
-- Locks:    DELETE of its mbus.msg_dep / mbus.msg_wait rows; mbus.release_deps's locks; drop_role's
-- Calls:    mbus.drop_role, mbus.queue_of_iid, mbus.queue_role, mbus.release_deps
-- Tables:   mbus.msg_dep, mbus.msg_wait
CREATE OR REPLACE FUNCTION mbus.queue_dropped(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    d text;
BEGIN
    DELETE FROM mbus.msg_dep AS x WHERE x.qname = queue_dropped.qname;
    DELETE FROM mbus.msg_wait AS x WHERE x.qname = queue_dropped.qname;
    FOR d IN SELECT DISTINCT x.dep_iid FROM mbus.msg_dep AS x
             WHERE mbus.queue_of_iid(x.dep_iid) = queue_dropped.qname LOOP
        PERFORM mbus.release_deps(d);
    END LOOP;
    PERFORM mbus.drop_role(mbus.queue_role('post', qname));
END;
$$;
