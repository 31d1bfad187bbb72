-- Function: mbus.create_segments(qname, p_from)
--
-- Purpose:  create_segments(qname): the partitions of mbus.q_<qname> (a partitioned table) with their
--           indexes: q_<q>$0 (parking) and q_<q>$1..$3 (rotating); index names q_<q>_<kind>$<n>.
-- Params:   qname text FILL
--           p_from integer DEFAULT 0 FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.create_segments(qname text, p_from integer DEFAULT 0)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    tbl text := 'q_' || qname;
    seg text;
BEGIN
    FOR n IN p_from .. 3 LOOP
        seg := tbl || '$' || n;
        IF to_regclass(format('mbus.%I', seg)) IS NULL THEN
            EXECUTE format('CREATE TABLE mbus.%I PARTITION OF mbus.%I FOR VALUES IN (%s)',
                           seg, tbl, n);
        END IF;
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (c, vt, id)',
                       tbl || '_claim$' || n, seg);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (id)', tbl || '_id$' || n, seg);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (iid) WHERE iid IS NOT NULL',
                       tbl || '_iid$' || n, seg);
        EXECUTE format('CREATE UNIQUE INDEX IF NOT EXISTS %I ON mbus.%I (lease_token) '
                       'WHERE lease_token IS NOT NULL', tbl || '_lease$' || n, seg);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (expires) WHERE expires IS NOT NULL',
                       tbl || '_expires$' || n, seg);
        EXECUTE format('COMMENT ON TABLE mbus.%I IS %L', seg,
                       CASE WHEN n = 0 THEN format('queue %s: deliveries that wait long', qname)
                            ELSE format('queue %s: rotating delivery segment %s', qname, n) END);
    END LOOP;
    -- Parent indexes of the same names as before segmentation: they attach the segments'
    -- indexes (nothing is built) and keep the names the docs and notices give.
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (c, vt, id)', tbl || '_claim', tbl);
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (id)', tbl || '_id', tbl);
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (iid) WHERE iid IS NOT NULL',
                   tbl || '_iid', tbl);
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (expires) WHERE expires IS NOT NULL',
                   tbl || '_expires', tbl);
    INSERT INTO mbus.queue_segment (qname) VALUES (qname) ON CONFLICT DO NOTHING;
END;
$$;
