-- Function: mbus._restricted_types()
--
-- Purpose:  The types a condition in the restricted grammar may compute with: booleans,
--           numbers, text (and untyped literals), jsonb, uuid, times and arrays of them, and
--           the row types of the event (mbus.stream_row) and of the subscription
--           (mbus.subscriptions).
--           None of them names a catalog object (unlike regclass, regproc, ...), and their
--           input and output functions read no table.
-- Params:   none
-- Returns:  oid[]: the types' oids
-- Locks:    none
-- Calls:    none
-- Tables:   mbus.subscriptions
CREATE OR REPLACE FUNCTION mbus._restricted_types()
RETURNS oid[]
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT array_agg(t.oid)
    FROM pg_type AS t
    WHERE t.oid IN ('mbus.stream_row'::regtype, 'mbus.subscriptions'::regtype)
       OR (t.typnamespace = 'pg_catalog'::regnamespace
           AND t.typname IN ('bool', 'int2', 'int4', 'int8', 'numeric', 'float4', 'float8',
                             'text', 'varchar', 'bpchar', 'unknown', 'jsonb', 'uuid', 'timestamptz',
                             'timestamp', 'date', 'time', 'interval',
                             '_bool', '_int2', '_int4', '_int8', '_numeric', '_float4',
                             '_float8', '_text', '_varchar', '_bpchar', '_jsonb', '_uuid',
                             '_timestamptz', '_timestamp', '_date', '_time', '_interval'));
$$;
