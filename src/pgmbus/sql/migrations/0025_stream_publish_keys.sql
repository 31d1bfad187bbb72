-- streams: idempotent publish. A producer that retries a publish after an ambiguous commit (the
-- connection broke between COMMIT and its reply) with the same idempotency key stores nothing
-- and gets the ids of the first publish back, as queue posts do with client iids.
--   * mbus.stream_publish_keys: one row per (topic, idempotency key) published within the
--     window (setting streams.idempotency_window, default 24 hours), with the ids the publish
--     returned. mbus.publish_once inserts the row in the publish's transaction (a rolled-back
--     publish leaves none; a concurrent publish of the key waits on the uncommitted row, then
--     finds it). Rows older than the window are deleted by mbus.maintain
--     (mbus.expire_publish_keys); publishes without a key never touch the table.
--   * mbus.publish and mbus.publish_batch gain the named parameter idempotency_key: their old
--     signatures are dropped here and made again by their function files.

CREATE TABLE mbus.stream_publish_keys (
    topic           text        NOT NULL,
    idempotency_key text        NOT NULL,
    event_ids       bigint[]    NOT NULL,
    published_at    timestamptz NOT NULL,
    PRIMARY KEY (topic, idempotency_key)
);

CREATE INDEX stream_publish_keys_published_at ON mbus.stream_publish_keys (published_at);

COMMENT ON TABLE mbus.stream_publish_keys IS
    'Idempotency keys published within streams.idempotency_window: a retry of one stores nothing.';

DROP FUNCTION IF EXISTS mbus.publish(text, jsonb, text, jsonb, bigint, timestamptz);
DROP FUNCTION IF EXISTS mbus.publish_batch(text, jsonb[], text[], jsonb[], bigint, timestamptz);
