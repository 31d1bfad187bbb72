-- queues integrity: what the integrity checks of the queue functions keep (issue 12, items 1-8).
--   * selector errors are counted per consumer and per trigger (mbus.queue_stats shows the
--     consumers' counts): a selector that fails on a message sends that consumer's copy (or the
--     trigger's copy) to mbus.dmq instead of failing the post;
--   * a temporary queue or consumer records the identity of what it made (the delivery table's
--     oid, the consumer's cid), so mbus.clear_tempq drops only that very object;
--   * mbus.t, an empty table of the message type: mbus.check_selector builds an index on it in a
--     rolled-back subtransaction (PostgreSQL's own test for static, immutable expressions),
--     instead of a temporary table named t that a session may have already;
--   * mbus.queue_stats gains a column, so it and the view over it are dropped here and made again
--     by their function files.

ALTER TABLE mbus.consumer ADD COLUMN selector_errors bigint NOT NULL DEFAULT 0;

COMMENT ON COLUMN mbus.consumer.selector_errors IS
    'Messages whose selector raised an error for this consumer (its copy went to mbus.dmq).';

ALTER TABLE mbus.queue_trigger ADD COLUMN selector_errors bigint NOT NULL DEFAULT 0;

COMMENT ON COLUMN mbus.queue_trigger.selector_errors IS
    'Messages whose trigger selector raised an error (the copy went to mbus.dmq).';

ALTER TABLE mbus.temp_object ADD COLUMN obj_id bigint;

COMMENT ON COLUMN mbus.temp_object.obj_id IS
    'What was made: the oid of mbus.q_<qname> for a queue, the cid for a consumer; clear_tempq '
    'drops the object only while it is still this one.';

UPDATE mbus.temp_object AS t SET obj_id = c.oid::bigint
FROM pg_class AS c
WHERE t.kind = 'queue' AND c.relnamespace = 'mbus'::regnamespace AND c.relname = 'q_' || t.qname;

UPDATE mbus.temp_object AS t SET obj_id = c.cid
FROM mbus.consumer AS c
WHERE t.kind = 'consumer' AND c.qname = t.qname AND c.cname = t.cname;

CREATE TABLE mbus.t OF mbus.qt_model;

COMMENT ON TABLE mbus.t IS
    'Always empty: mbus.check_selector tests a selector as an index expression on it.';

DROP VIEW IF EXISTS mbus.queue_metrics;

DROP FUNCTION IF EXISTS mbus.queue_stats(text, timestamptz);
