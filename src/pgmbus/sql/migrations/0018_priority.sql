-- priority per message (issue 16 queue features):
--   * every queue table mbus.q_<q> gains priority smallint NOT NULL DEFAULT 0 (0..32767; higher is
--     claimed first) and a partial index q_<q>_prio (c, priority DESC, vt, id) WHERE priority > 0
--     on each segment (q_<q>_prio$<n>) and the parent: the claim index (c, vt, id) stays as it
--     was, so the vt range of today's claim is never turned into a filter;
--   * mbus.queue_segment.prioritized: set by the first post with priority > 0; claims of a
--     flagged queue take the priority tier first (priority DESC, vt, id over the partial index),
--     then today's claim over the priority-0 rows; claims of an unflagged queue skip the tier;
--   * post_<q> and mbus.post gain the named parameter priority: the old signatures are dropped
--     here (as in 0014) and made again by the installer (function files, then regenerate_queue
--     for every queue).

ALTER TABLE mbus.queue_segment ADD COLUMN prioritized boolean NOT NULL DEFAULT false;

COMMENT ON COLUMN mbus.queue_segment.prioritized IS
    'A message with priority > 0 was posted: claims take the priority tier first.';

DO $$
DECLARE
    v_q   text;
    v_tbl text;
BEGIN
    FOR v_q IN SELECT q.qname FROM mbus.queue AS q ORDER BY q.qname LOOP
        v_tbl := 'q_' || v_q;
        EXECUTE format('ALTER TABLE mbus.%I ADD COLUMN priority smallint NOT NULL DEFAULT 0',
                       v_tbl);
        FOR n IN 0 .. 3 LOOP
            EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (c, priority DESC, vt, id) '
                           'WHERE priority > 0', v_tbl || '_prio$' || n, v_tbl || '$' || n);
        END LOOP;
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (c, priority DESC, vt, id) '
                       'WHERE priority > 0', v_tbl || '_prio', v_tbl);
    END LOOP;
END;
$$;

DO $$
DECLARE
    v_fn regprocedure;
BEGIN
    FOR v_fn IN
        SELECT p.oid::regprocedure FROM pg_proc AS p JOIN mbus.queue AS q
            ON p.proname = 'post_' || q.qname
        WHERE p.pronamespace = 'mbus'::regnamespace
    LOOP
        EXECUTE format('DROP FUNCTION %s', v_fn);
    END LOOP;
END;
$$;

DROP FUNCTION IF EXISTS mbus.post(text, jsonb, jsonb, jsonb, timestamptz, timestamptz, text, text,
                                  anycompatible);
