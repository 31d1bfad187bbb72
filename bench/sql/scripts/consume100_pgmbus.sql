-- consume 100 messages per call: pgmbus (the consumer's generated batch consume function)
SELECT * FROM mbus.consumen_bench_by_default(100);
