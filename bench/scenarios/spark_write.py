"""Rows published from Spark: ``write.format("pgmbus")`` vs Spark's JDBC sink, same rows.

The same DataFrame (``size`` rows of key and JSON payload, two partitions) is written by the
candidate as stream events, exactly once (tasks stage rows with ``COPY``, the driver's commit
publishes them with ``publish_batch`` and records the write in the ledger), and by the baseline
with Spark's JDBC sink into a table of the same columns (batched INSERTs, no exactly-once).
"""

from __future__ import annotations

from typing import Any

import psycopg

from bench.harness import Measurement, timed
from bench.scenarios._spark import jdbc, session

name = "spark_write"
unit = "rows"
goal = "rows/s published from Spark (exactly once) vs Spark's JDBC sink"
default_size = 100_000


def setup(dsn: str, size: int) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS bench_sink (topic text NOT NULL, key text, "
            "payload jsonb NOT NULL, headers jsonb)"
        )
    session()


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

    return timed(size, run)


def baseline(dsn: str, size: int) -> Measurement:
    from pyspark.sql import functions as F

    df = _rows(size).withColumn("topic", F.lit("bench.out"))
    url, props = jdbc(dsn)

    def run() -> None:
        df.write.jdbc(
            url + "?stringtype=unspecified&reWriteBatchedInserts=true", "bench_sink",
            mode="append", properties={**props, "batchsize": "5000"},
        )

    return timed(size, run)
