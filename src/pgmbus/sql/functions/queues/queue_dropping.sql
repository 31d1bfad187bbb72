-- Function: mbus.queue_dropping(qname)
--
-- Purpose:  Before the queue's table goes: drop its views (mbus.create_view) and its
--           temporary-object entries; run now the dependency releases pending from consumes earlier
--           in this transaction (SET CONSTRAINTS dep_gone IMMEDIATE, then DEFERRED again:
--           PostgreSQL does not drop a table with pending trigger events); drop its consumers'
--           roles.
-- Params:   qname  the queue's name (text)
-- Returns:  void
-- Locks:    DROP VIEW (ACCESS EXCLUSIVE on each view); DELETE of mbus.queue_view and
--           mbus.temp_object rows; mbus.release_deps's locks for the pending releases; drop_role's
-- Calls:    mbus.drop_role, mbus.queue_role
-- Tables:   mbus.consumer, mbus.queue_view, mbus.temp_object
CREATE OR REPLACE FUNCTION mbus.queue_dropping(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    r record;
BEGIN
    FOR r IN DELETE FROM mbus.queue_view AS v WHERE v.qname = queue_dropping.qname
             RETURNING v.view_schema, v.view_name LOOP
        EXECUTE format('DROP VIEW IF EXISTS %I.%I', r.view_schema, r.view_name);
    END LOOP;
    DELETE FROM mbus.temp_object AS t WHERE t.qname = queue_dropping.qname;
    -- Run the releases pending from consumes earlier in this transaction now: PostgreSQL does
    -- not drop a table with pending trigger events.
    SET CONSTRAINTS mbus.dep_gone IMMEDIATE;
    SET CONSTRAINTS mbus.dep_gone DEFERRED;
    PERFORM mbus.drop_role(mbus.queue_role('consume', queue_dropping.qname, c.cname))
    FROM mbus.consumer AS c WHERE c.qname = queue_dropping.qname;
END;
$$;
