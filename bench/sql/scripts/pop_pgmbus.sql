-- consume 1 message per transaction: pgmbus (the consumer's generated consume function)
SELECT * FROM mbus.consume_bench_by_default();
