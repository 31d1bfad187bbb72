-- Function: mbus.queue_dropped(qname)
--
-- Purpose:  queue_dropped(qname): after the table went: its waiting messages are forgotten, messages
--           waiting on its messages are released (unless those are in the dmq), roles dropped.
-- Params:   qname text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
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
