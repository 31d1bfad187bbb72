"""Rows published from Spark: ``write.format("pgmbus")`` vs Spark's JDBC sink, same rows.

The same DataFrame (``size`` rows of key and JSON payload, two partitions) is written by the
candidate as stream events, exactly once (each task ``COPY``s its rows into ``mbus.events`` in
parallel, hidden from readers by its ``mbus.spark_pending`` row; the driver's commit records the
write in the ledger and flips the pending rows, O(tasks)), and by the baseline with Spark's JDBC
sink into a table shaped like ``mbus.events`` (batched INSERTs, no exactly-once).
"""

from __future__ import annotations

from typing import Any

import psycopg

from bench.harness import Measurement
from bench.scenarios._spark import WARMUP_RUNS, jdbc, session, timed_with_cpu

name = "spark_write"
unit = "rows"
goal = "rows/s published from Spark (exactly once) vs Spark's JDBC sink"
default_size = 300_000

# The baseline's table has the columns, defaults and indexes of mbus.events, so both sides pay
# for the same storage and the ratio measures the path.
_SETUP = [
    "CREATE SEQUENCE IF NOT EXISTS bench_sink_seq",
    "CREATE TABLE IF NOT EXISTS bench_sink ("
    " id bigint NOT NULL DEFAULT nextval('bench_sink_seq'), topic text NOT NULL, key text,"
    " payload jsonb NOT NULL, headers jsonb,"
    " published_at timestamptz NOT NULL DEFAULT clock_timestamp(),"
    " txid xid8 NOT NULL DEFAULT pg_current_xact_id(),"
    " CHECK (topic <> '' AND octet_length(topic) <= 200),"
    " CHECK (headers IS NULL OR jsonb_typeof(headers) = 'object'),"
    " PRIMARY KEY (id)) PARTITION BY RANGE (id)",
    "CREATE INDEX IF NOT EXISTS bench_sink_txid_id ON bench_sink (txid, id)",
    "CREATE TABLE IF NOT EXISTS bench_sink_1 PARTITION OF bench_sink"
    " FOR VALUES FROM (0) TO (9223372036854775807)",
]


def setup(dsn: str, size: int) -> None:
    with psycopg.connect(dsn) as conn:
        for statement in _SETUP:
            conn.execute(statement)  # type: ignore[arg-type]
    if size >= 10_000:  # warm both paths (workers, imports, JIT) outside the timed rounds
        for _ in range(WARMUP_RUNS):
            candidate(dsn, size)
            baseline(dsn, size)


def _rows(size: int) -> Any:
    from pyspark.sql import functions as F

    spark = session()
    return spark.range(0, size, numPartitions=2).select(
        F.concat(F.lit("k"), (F.col("id") % 1000).cast("string")).alias("key"),
        F.to_json(
            F.struct(F.col("id").alias("n"), F.concat(F.lit("event "), F.col("id")).alias("text"))
        ).alias("payload"),
    )


def candidate(dsn: str, size: int) -> Measurement:
    df = _rows(size)

    def run() -> None:
        df.write.format("pgmbus").option("dsn", dsn).option("topic", "bench.out").mode(
            "append"
        ).save()

    return timed_with_cpu(dsn, size, run)


def baseline(dsn: str, size: int) -> Measurement:
    from pyspark.sql import functions as F

    df = _rows(size).withColumn("topic", F.lit("bench.out"))
    url, props = jdbc(dsn)

    def run() -> None:
        df.write.jdbc(
            url + "?stringtype=unspecified&reWriteBatchedInserts=true",
            "bench_sink",
            mode="append",
            properties={**props, "batchsize": "5000"},
        )

    return timed_with_cpu(dsn, size, run)
