-- Function: mbus.create_segments(qname, p_from)
--
-- Purpose:  Make the partitions of mbus.q_<qname> (partitioned on seg) with their indexes, those
--           missing from segment p_from on: q_<q>$0 (parking: deliveries due in more than a
--           minute, never truncated) and q_<q>$1..$3 (rotating). Each gets the claim index
--           (c, vt, id), the priority tier's partial (c, priority DESC, vt, id), (id), partial
--           (iid) and (expires) indexes and a unique partial (lease_token) index, named
--           q_<q>_<kind>$<n>; the parent's indexes of the same names without $<n> attach them.
--           Adds the queue's mbus.queue_segment row (current segment 1). Idempotent.
-- Params:   qname   the queue's name (text)
--           p_from  the first segment number to make (integer; default 0 = all)
-- Returns:  void
-- Locks:    ACCESS EXCLUSIVE on mbus.q_<qname> while a partition is added; SHARE on each segment
--           for CREATE INDEX IF NOT EXISTS (taken even when the index exists); called on a new
--           table, so nobody else holds it
-- Calls:    mbus.generated_name
-- Tables:   mbus.queue_segment
-- Design:   docs/DESIGN.md#decisions-and-the-figures-behind-them
CREATE OR REPLACE FUNCTION mbus.create_segments(qname text, p_from integer DEFAULT 0)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    tbl text := mbus.generated_name('relation', 'table', qname);
    seg text;
BEGIN
    FOR n IN p_from .. 3 LOOP
        seg := mbus.generated_name('relation', 'segment' || n, qname);
        IF to_regclass(format('mbus.%I', seg)) IS NULL THEN
            EXECUTE format('CREATE TABLE mbus.%I PARTITION OF mbus.%I FOR VALUES IN (%s)',
                           seg, tbl, n);
        END IF;
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (c, vt, id)',
                       mbus.generated_name('relation', 'claim' || n, qname), seg);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (c, priority DESC, vt, id) '
                       'WHERE priority > 0',
                       mbus.generated_name('relation', 'prio' || n, qname), seg);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (id)',
                       mbus.generated_name('relation', 'id' || n, qname), seg);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (iid) WHERE iid IS NOT NULL',
                       mbus.generated_name('relation', 'iid' || n, qname), seg);
        EXECUTE format('CREATE UNIQUE INDEX IF NOT EXISTS %I ON mbus.%I (lease_token) '
                       'WHERE lease_token IS NOT NULL',
                       mbus.generated_name('relation', 'lease' || n, qname), seg);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (expires) WHERE expires IS NOT NULL',
                       mbus.generated_name('relation', 'expires' || n, qname), seg);
        EXECUTE format('COMMENT ON TABLE mbus.%I IS %L', seg,
                       CASE WHEN n = 0 THEN format('queue %s: deliveries that wait long', qname)
                            ELSE format('queue %s: rotating delivery segment %s', qname, n) END);
    END LOOP;
    -- Parent indexes of the same names as before segmentation: they attach the segments'
    -- indexes (nothing is built) and keep the names the docs and notices give.
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (c, vt, id)',
                   mbus.generated_name('relation', 'claim', qname), tbl);
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (c, priority DESC, vt, id) '
                   'WHERE priority > 0', mbus.generated_name('relation', 'prio', qname), tbl);
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (id)',
                   mbus.generated_name('relation', 'id', qname), tbl);
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (iid) WHERE iid IS NOT NULL',
                   mbus.generated_name('relation', 'iid', qname), tbl);
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (expires) WHERE expires IS NOT NULL',
                   mbus.generated_name('relation', 'expires', qname), tbl);
    INSERT INTO mbus.queue_segment (qname) VALUES (qname) ON CONFLICT DO NOTHING;
END;
$$;
