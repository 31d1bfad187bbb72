-- Setup, fill and backlog blocks of the sql_streams scenario (bench.sql.model.queries).

-- name: raw_events
-- A table shaped like mbus.events: partitioned by id, sequence id, the writer's transaction
-- id, the same checks and indexes.
CREATE SEQUENCE raw_event_seq;
CREATE TABLE raw_events (
    id bigint NOT NULL DEFAULT nextval('raw_event_seq'), topic text NOT NULL, key text,
    payload jsonb NOT NULL, headers jsonb,
    published_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    CHECK (topic <> '' AND octet_length(topic) <= 200),
    CHECK (headers IS NULL OR jsonb_typeof(headers) = 'object'),
    PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE INDEX raw_events_txid_id ON raw_events (txid, id);
CREATE TABLE raw_events_1 PARTITION OF raw_events FOR VALUES FROM (0) TO (9223372036854775807);
CREATE TABLE raw_cursor (pos bigint NOT NULL);
INSERT INTO raw_cursor VALUES (0)

-- name: raw_fill
INSERT INTO raw_events (topic, payload)
SELECT 'bench', %(payload)s::jsonb FROM generate_series(1, %(n)s)

-- name: raw_backlog
SELECT count(*) FROM raw_events WHERE id > (SELECT pos FROM raw_cursor)

-- name: mbus_group
SELECT mbus.create_group('bench')

-- name: mbus_fill
SELECT count(*) FROM mbus.publish_batch('bench', array_fill(%(payload)s::jsonb, ARRAY[%(n)s::integer]))

-- name: mbus_backlog
SELECT sum(pending_events) FROM mbus.group_status() WHERE group_name = 'bench'

-- name: pgq_queue
SELECT pgq.create_queue('bench');
-- a tick per 1,000 events: the fill calls the ticker after each chunk of 1,000, and the ticker
-- ticks when one event is new (its count starts at the first tick's sequence value: with 1,000
-- the first batch held 1,999 events), so each batch is one chunk
SELECT pgq.set_queue_config('bench', 'ticker_max_count', '1');
SELECT pgq.register_consumer('bench', 'reader')

-- name: pgq_queue10
-- the read10 path: a tick per 10 events (its fill calls the ticker after each chunk of 10)
SELECT pgq.create_queue('bench');
SELECT pgq.set_queue_config('bench', 'ticker_max_count', '1');
SELECT pgq.register_consumer('bench', 'reader')

-- name: pgq_fill
SELECT count(pgq.insert_event('bench', 'bench', %(payload)s)) FROM generate_series(1, %(n)s)

-- name: pgq_tick
SELECT pgq.ticker('bench')

-- name: pgq_backlog
SELECT pending_events FROM pgq.get_consumer_info('bench', 'reader')
