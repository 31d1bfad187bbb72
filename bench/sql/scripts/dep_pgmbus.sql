-- a consume_after cycle, each statement its own transaction: post a message, post one that
-- waits for it, consume both (the first consume's commit releases the second): pgmbus
SELECT mbus.post_bench(:payload::jsonb) AS first \gset
SELECT mbus.post_bench(:payload::jsonb, consume_after => :first::text);
SELECT * FROM mbus.consume_bench_by_default();
SELECT * FROM mbus.consume_bench_by_default();
