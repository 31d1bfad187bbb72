-- Function: mbus.name_clash(qname, cname)
--
-- Purpose:  Why the names a new queue (cname NULL: the queue and its consumer 'default') or a new
--           consumer would get (mbus.generated_names) cannot be used, or NULL when they are all
--           free: a name another queue or consumer owns (queue 'a' consumer 'b_by_c' and queue
--           'a_by_b' consumer 'c' would share consume_a_by_b_by_c), a name of the mbus schema
--           itself (queue 'dmq' would make post_dmq), a relation of that name in schema mbus, or a
--           role of that name that this database's mbus did not make (no USAGE on schema mbus:
--           another database's queue, or a role of the user's; a role left by a dropped database of
--           this name is not a clash, mbus.role_orphaned). Names both owners.
-- Params:   qname  the queue's name (text)
--           cname  the consumer's name (text; NULL = a new queue)
-- Returns:  text: the reason, or NULL when the names are free
-- Locks:    none (reads the catalog); callers hold pg_advisory_xact_lock(1835165041)
-- Calls:    mbus.generated_names, mbus.role_orphaned
-- Tables:   mbus.consumer, mbus.queue
CREATE OR REPLACE FUNCTION mbus.name_clash(qname text, cname text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_self   text := CASE WHEN cname IS NULL THEN format('queue %s', qname)
                          ELSE format('consumer %s of queue %s', cname, qname) END;
    v_reason text;
BEGIN
    WITH n AS (
        SELECT g.kind, g.name FROM mbus.generated_names(qname, cname) AS g
        UNION ALL
        SELECT g.kind, g.name FROM mbus.generated_names(qname, 'default') AS g
        WHERE cname IS NULL),
    x AS (
        SELECT format('queue %s', q.qname) AS owner, g.kind, g.name
        FROM mbus.queue AS q, mbus.generated_names(q.qname) AS g
        UNION ALL
        SELECT format('consumer %s of queue %s', c.cname, c.qname), g.kind, g.name
        FROM mbus.consumer AS c, mbus.generated_names(c.qname, c.cname) AS g)
    SELECT r.why INTO v_reason
    FROM (SELECT 1 AS o, format('%s would make %s %s, which belongs to %s', v_self, n.kind, n.name,
                                x.owner) AS why
          FROM n JOIN x ON x.kind = n.kind AND x.name = n.name
          UNION ALL
          SELECT 2, format('%s would make function %s, which belongs to the mbus schema '
                           '(function mbus.%s)', v_self, n.name, n.name)
          FROM n JOIN pg_proc AS p ON p.proname = n.name AND p.pronamespace = 'mbus'::regnamespace
          WHERE n.kind = 'function'
          UNION ALL
          SELECT 2, format('%s would make relation %s, which belongs to the mbus schema '
                           '(relation mbus.%s)', v_self, n.name, n.name)
          FROM n JOIN pg_class AS c ON c.relname = n.name AND c.relnamespace = 'mbus'::regnamespace
          WHERE n.kind = 'relation'
          UNION ALL
          SELECT 3, format('%s would make role %s, which exists and was not made by this '
                           'database''s mbus (another database''s queue or a user role)',
                           v_self, n.name)
          FROM n JOIN pg_roles AS r ON r.rolname = n.name
          WHERE n.kind = 'role' AND NOT has_schema_privilege(r.oid, 'mbus', 'USAGE')
            AND NOT mbus.role_orphaned(n.name)) AS r
    ORDER BY r.o LIMIT 1;
    RETURN v_reason;
END;
$$;
