"""Events read into Spark: ``format("pgmbus")`` vs Spark's JDBC source on the same rows.

Both sides read every event of the log (id, topic, key, payload and headers as JSON text,
publish time) with two partitions (local[2]: one per core) into a ``noop`` sink, which makes
Spark materialise every column of every row (``count()`` would let JDBC select nothing). The
baseline is configured as a competent user would: split on the primary key with lower/upper
bound from the table, ``fetchsize`` 10,000. The candidate plans its range with a snapshot
cursor (a consistent range, which JDBC cannot give) and reads each part through ADBC.

Both run in one shared session, warmed up over several runs each (the JVM compiles the hot
paths of either reader only after a few), then alternate. ``extra`` gives each side's CPU
seconds per million events in the server, the JVM and the Python workers: on 2 cores this is
what bounds the rates.
"""

from __future__ import annotations

import psycopg

from bench.harness import Measurement
from bench.scenarios._spark import WARMUP_RUNS, jdbc, session, timed_with_cpu

name = "spark_read"
unit = "events"
goal = "events/s into Spark via format('pgmbus') vs Spark's JDBC source: >= 1x"
default_size = 1_000_000

_QUERY = (
    "(SELECT id, topic, key, payload::text AS payload, headers::text AS headers, published_at "
    "FROM mbus.events) AS e"
)


def setup(dsn: str, size: int) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "INSERT INTO mbus.events (topic, key, payload, headers) "
            "SELECT 'bench.t' || (g %% 4), 'k' || (g %% 1000), "
            "jsonb_build_object('n', g, 'text', 'event ' || g, 'tags', jsonb_build_array('a')), "
            "CASE WHEN g %% 10 = 0 THEN jsonb_build_object('trace', g) END "
            "FROM generate_series(1, %s) AS g",
            (size,),
        )
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE mbus.events")  # hint bits set: no side pays for them
    if size >= 10_000:  # warm both paths (workers, imports, JIT) outside the timed rounds
        for _ in range(WARMUP_RUNS):
            candidate(dsn, size)
            baseline(dsn, size)


def candidate(dsn: str, size: int) -> Measurement:
    spark = session()

    def run() -> None:
        df = spark.read.format("pgmbus").option("dsn", dsn).option("numPartitions", 2).load()
        df.write.format("noop").mode("overwrite").save()

    return timed_with_cpu(dsn, size, run)


def baseline(dsn: str, size: int) -> Measurement:
    spark = session()
    url, props = jdbc(dsn)
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT min(id), max(id) FROM mbus.events").fetchone()
    assert row is not None

    def run() -> None:
        df = spark.read.jdbc(
            url,
            _QUERY,
            column="id",
            lowerBound=row[0],
            upperBound=row[1] + 1,
            numPartitions=2,
            properties={**props, "fetchsize": "10000"},
        )
        df.write.format("noop").mode("overwrite").save()

    return timed_with_cpu(dsn, size, run)
