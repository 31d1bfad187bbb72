-- Blocks of the stream latency run (bench.sql.latency): setup and the PgQ consumer's calls.

-- name: mbus_group
SELECT mbus.create_group('lat')

-- name: pgq_queue
SELECT pgq.create_queue('bench');
SELECT pgq.register_consumer('bench', 'reader')

-- name: pgq_fast
-- a tick at every ticker call that finds an event (pgqd's ticker then decides the latency)
SELECT pgq.set_queue_config('bench', 'ticker_max_count', '1');
SELECT pgq.set_queue_config('bench', 'ticker_max_lag', '0')

-- name: pgq_ticker
SELECT pgq.ticker()

-- name: pgq_next_batch
SELECT pgq.next_batch('bench', 'reader')

-- name: pgq_events
SELECT extract(epoch FROM ev_time)::float8 FROM pgq.get_batch_events(%(batch)s)

-- name: pgq_finish
SELECT pgq.finish_batch(%(batch)s)
