-- priority on batch posts and in the dmq (issue 16 queue features):
--   * mbus.dmq gains priority smallint: a dead message keeps the priority it had, and
--     mbus.dmq_replay posts it back with it (bury, max_attempts, a selector that raised);
--   * postn_<q>, mbus.post_batch and mbus.post_each gain priority integer[] (one per message):
--     the old signatures are dropped here (as in 0018) and made again by the installer (function
--     files, then regenerate_queue for every queue); mbus.selector_failed gains priority.

ALTER TABLE mbus.dmq ADD COLUMN priority smallint NOT NULL DEFAULT 0;

COMMENT ON COLUMN mbus.dmq.priority IS
    'The priority the message had (0..32767); mbus.dmq_replay posts it back with it.';

DO $$
DECLARE
    v_fn regprocedure;
BEGIN
    FOR v_fn IN
        SELECT p.oid::regprocedure FROM pg_proc AS p JOIN mbus.queue AS q
            ON p.proname = 'postn_' || q.qname
        WHERE p.pronamespace = 'mbus'::regnamespace
    LOOP
        EXECUTE format('DROP FUNCTION %s', v_fn);
    END LOOP;
END;
$$;

DROP FUNCTION IF EXISTS mbus.post_batch(text, jsonb[], jsonb[], jsonb[], timestamptz, timestamptz);
DROP FUNCTION IF EXISTS mbus.post_each(text, jsonb[], jsonb[], jsonb[], timestamptz, timestamptz);
DROP FUNCTION IF EXISTS mbus.selector_failed(text, text, text, mbus.qt_model, text, text);
