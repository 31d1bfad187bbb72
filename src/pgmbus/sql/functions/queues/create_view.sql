-- Function: mbus.create_view(qname, viewname)
--
-- Purpose:  FILL
-- Params:   qname text FILL
--           viewname text DEFAULT NULL FILL
-- Returns:  text
-- Locks:    FILL
-- Callers:  FILL
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
    EXECUTE format($t$
CREATE VIEW %I.%I AS
SELECT DISTINCT ON (q.id) q.id, coalesce(q.iid, %L || q.id || '@' || current_database()) AS iid,
       q.added, q.delayed_until, q.expires, q.headers, q.properties, q.data
FROM mbus.%I AS q ORDER BY q.id$t$, v_schema, v_name, qname || '.', 'q_' || qname);
    EXECUTE format('CREATE TRIGGER post INSTEAD OF INSERT ON %I.%I FOR EACH ROW '
                   'EXECUTE FUNCTION mbus.view_insert(%L)', v_schema, v_name, qname);
    INSERT INTO mbus.queue_view (view_schema, view_name, qname) VALUES (v_schema, v_name, qname);
    RETURN format('%I.%I', v_schema, v_name);
END;
$$;
