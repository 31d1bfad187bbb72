-- Function: mbus.queue_dropping(qname)
--
-- Purpose:  queue_dropping(qname): before the table goes: its views and temporary-object entries.
-- Params:   qname text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
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
