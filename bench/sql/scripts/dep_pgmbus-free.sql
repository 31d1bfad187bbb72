-- the same posts and consumes without consume_after: pgmbus (what the dependency costs)
SELECT mbus.post_bench(:payload::jsonb) AS first \gset
SELECT mbus.post_bench(:payload::jsonb);
SELECT * FROM mbus.consume_bench_by_default();
SELECT * FROM mbus.consume_bench_by_default();
