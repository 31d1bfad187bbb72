"""A normalized description of what a database holds in schema ``mbus`` (and pgmbus's roles).

Two databases with the same description have the same pgmbus catalog, whatever order their
objects were made in: functions by identity with their definitions, ACLs and comments;
tables, views, sequences and types with their columns, constraints, indexes, triggers, ACLs
and comments. An ACL is compared as what it grants (a default one spelled out), not as stored:
a restored dump leaves NULL where an install that granted and revoked keeps the same rights
written down. Partitions are left out (their names carry the date they were made on).
"""

from __future__ import annotations

from typing import Any

import psycopg

DESCRIBE = """
WITH rel AS (
    SELECT c.oid, c.relname, c.relkind,
           coalesce(c.relacl, acldefault(CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char",
                                         c.relowner)) AS relacl
    FROM pg_class AS c
    WHERE c.relnamespace = 'mbus'::regnamespace AND NOT c.relispartition
      AND NOT EXISTS (SELECT FROM pg_index AS i JOIN pg_class AS t ON t.oid = i.indrelid
                      WHERE i.indexrelid = c.oid AND t.relispartition)
)
SELECT 'function ' || p.oid::regprocedure::text,
       concat_ws(E'\\n', CASE WHEN p.prokind IN ('f', 'p') THEN pg_get_functiondef(p.oid) END,
                 (SELECT string_agg(a::text, ',' ORDER BY a::text)
                  FROM unnest(coalesce(p.proacl, acldefault('f', p.proowner))) AS a),
                 obj_description(p.oid, 'pg_proc'))
FROM pg_proc AS p WHERE p.pronamespace = 'mbus'::regnamespace
UNION ALL
SELECT 'relation ' || r.relname,
       concat_ws(E'\\n', r.relkind::text,
                 (SELECT string_agg(a::text, ',' ORDER BY a::text) FROM unnest(r.relacl) AS a),
                 obj_description(r.oid, 'pg_class'),
                 CASE WHEN r.relkind = 'i' THEN pg_get_indexdef(r.oid) END,
                 CASE WHEN r.relkind IN ('v', 'm') THEN pg_get_viewdef(r.oid) END)
FROM rel AS r
UNION ALL
SELECT 'column ' || r.relname || '.' || a.attname,
       concat_ws(' ', format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attidentity::text,
                 a.attgenerated::text, pg_get_expr(d.adbin, d.adrelid),
                 col_description(r.oid, a.attnum))
FROM rel AS r JOIN pg_attribute AS a ON a.attrelid = r.oid AND a.attnum > 0
     AND NOT a.attisdropped AND r.relkind <> 'i'
LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
UNION ALL
SELECT 'constraint ' || coalesce(r.relname, t.typname) || '.' || co.conname,
       pg_get_constraintdef(co.oid)
FROM pg_constraint AS co
LEFT JOIN rel AS r ON r.oid = co.conrelid
LEFT JOIN pg_type AS t ON t.oid = co.contypid
WHERE co.connamespace = 'mbus'::regnamespace AND (r.oid IS NOT NULL OR t.oid IS NOT NULL)
UNION ALL
SELECT 'trigger ' || r.relname || '.' || tg.tgname,
       pg_get_triggerdef(tg.oid) || ' ' || tg.tgenabled::text
FROM pg_trigger AS tg JOIN rel AS r ON r.oid = tg.tgrelid WHERE NOT tg.tgisinternal
UNION ALL
SELECT 'type ' || t.typname,
       concat_ws(' ', t.typtype::text,
                 (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
                  FROM pg_enum AS e WHERE e.enumtypid = t.oid),
                 format_type(t.typbasetype, t.typtypmod))
FROM pg_type AS t
WHERE t.typnamespace = 'mbus'::regnamespace AND t.typtype IN ('e', 'd')
UNION ALL
SELECT 'sequence ' || c.relname,
       concat_ws(' ', s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmax, s.seqmin,
                 s.seqcycle)
FROM pg_sequence AS s JOIN pg_class AS c ON c.oid = s.seqrelid
WHERE c.relnamespace = 'mbus'::regnamespace
UNION ALL
SELECT 'schema mbus', concat_ws(E'\\n',
       (SELECT string_agg(a::text, ',' ORDER BY a::text)
        FROM pg_namespace AS n, unnest(coalesce(n.nspacl, acldefault('n', n.nspowner))) AS a
        WHERE n.nspname = 'mbus'),
       obj_description('mbus'::regnamespace, 'pg_namespace'))
WHERE to_regnamespace('mbus') IS NOT NULL
"""

LEFTOVERS = """
SELECT 'schema ' || nspname FROM pg_namespace WHERE nspname = 'mbus'
UNION ALL
SELECT 'role ' || rolname FROM pg_roles
WHERE shobj_description(oid, 'pg_authid')
      LIKE 'made by pgmbus for database ' || current_database() || ' (oid %'
UNION ALL
SELECT 'event trigger ' || evtname FROM pg_event_trigger WHERE evtname LIKE '%mbus%'
"""


def describe(conn: psycopg.Connection[Any]) -> dict[str, str]:
    """The mbus catalog of the connection's database: a name -> definition mapping."""
    if conn.execute("SELECT to_regnamespace('mbus') IS NULL").fetchone() == (True,):
        return {}
    return {str(k): str(v) for k, v in conn.execute(DESCRIBE.encode()).fetchall()}


def differences(left: dict[str, str], right: dict[str, str]) -> list[str]:
    """Readable lines for what differs between two descriptions."""
    lines = [f"only in the first: {k}" for k in sorted(left.keys() - right.keys())]
    lines += [f"only in the second: {k}" for k in sorted(right.keys() - left.keys())]
    lines += [f"differs: {k}" for k in sorted(left.keys() & right.keys()) if left[k] != right[k]]
    return lines
