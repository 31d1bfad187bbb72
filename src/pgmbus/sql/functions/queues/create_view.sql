-- Function: mbus.create_view(qname, viewname)
--
-- Purpose:  Make a view of the queue whose INSERT posts to it (an INSTEAD OF INSERT trigger
--           calling mbus.view_insert, which runs as the owner): GRANT INSERT on the view is all a
--           role needs to post. Reading it lists the pending messages, one row per message: id,
--           iid, added, delayed_until, expires, headers, properties, data, to roles with SELECT
--           on the whole view only; PUBLIC gets SELECT on the column iid alone (for `INSERT ...
--           RETURNING iid`) and reads no row. Recorded in mbus.queue_view, dropped with the queue.
-- Params:   qname     the queue's name (text)
--           viewname  [schema.]name of the view (text; NULL = public.<qname>_q)
-- Returns:  text: the view's quoted qualified name; MB006 for a bad view name, MB002 for a
--           schema that does not exist
-- Locks:    CREATE VIEW, CREATE TRIGGER and GRANT on the new view; no queue lock
-- Calls:    mbus.generated_name, mbus.require_queue, mbus.view_insert
-- Tables:   mbus.queue_view
CREATE OR REPLACE FUNCTION mbus.create_view(qname text, viewname text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_parts text[];
    v_schema text;
    v_name   text;
BEGIN
    PERFORM mbus.require_queue(qname);
    v_parts := parse_ident(coalesce(viewname, 'public.' || qname || '_q'));
    IF cardinality(v_parts) = 1 THEN
        v_schema := 'public';
        v_name := v_parts[1];
    ELSIF cardinality(v_parts) = 2 THEN
        v_schema := v_parts[1];
        v_name := v_parts[2];
    ELSE
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('bad view name %L', viewname);
    END IF;
    IF to_regnamespace(quote_ident(v_schema)) IS NULL THEN  -- else a raw 3F000
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('schema %s of view %s does not exist', v_schema, viewname);
    END IF;
    -- Made twice: the second definition names the view itself (a regclass constant, which
    -- survives a rename) in its row filter.
    FOR i IN 1 .. 2 LOOP
        EXECUTE format($t$
%s VIEW %I.%I AS
SELECT DISTINCT ON (q.id) q.id, coalesce(q.iid, %L || q.id || '@' || current_database()) AS iid,
       q.added, q.delayed_until, q.expires, q.headers, q.properties, q.data
FROM mbus.%I AS q
WHERE %s
ORDER BY q.id$t$, CASE WHEN i = 1 THEN 'CREATE' ELSE 'CREATE OR REPLACE' END, v_schema,
            v_name, qname || '.', mbus.generated_name('relation', 'table', qname),
            CASE WHEN i = 1 THEN 'false'
                 ELSE format('pg_catalog.has_table_privilege(%L::regclass, ''SELECT'')',
                             format('%I.%I', v_schema, v_name)) END);
    END LOOP;
    EXECUTE format('GRANT SELECT (iid) ON %I.%I TO PUBLIC', v_schema, v_name);
    EXECUTE format('CREATE TRIGGER post INSTEAD OF INSERT ON %I.%I FOR EACH ROW '
                   'EXECUTE FUNCTION mbus.view_insert(%L)', v_schema, v_name, qname);
    INSERT INTO mbus.queue_view (view_schema, view_name, qname) VALUES (v_schema, v_name, qname);
    RETURN format('%I.%I', v_schema, v_name);
END;
$$;
