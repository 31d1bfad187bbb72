"""Events read into Spark: ``format("pgmbus")`` vs Spark's JDBC source on the same rows.

Both sides read every event of the log (id, topic, key, payload and headers as JSON text,
publish time) with two partitions into a ``noop`` sink, in one shared local[2] session. The
candidate plans its range with a snapshot cursor and streams ``COPY`` CSV into Arrow; the
baseline is the JDBC source split on ``id`` (lower/upper bound from the table), which has no
cursor and cannot stream a consistent range.
"""

from __future__ import annotations

import psycopg

from bench.harness import Measurement, timed
from bench.scenarios._spark import jdbc, session

name = "spark_read"
unit = "events"
goal = "events/s into Spark via format('pgmbus') vs Spark's JDBC source: >= 1x"
default_size = 200_000

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
        conn.execute("ANALYZE mbus.events")
    if size >= 10_000:  # warm both paths (workers, imports, JDBC) outside the timed rounds
        candidate(dsn, size)
        baseline(dsn, size)


def candidate(dsn: str, size: int) -> Measurement:
    spark = session()

    def run() -> None:
        df = spark.read.format("pgmbus").option("dsn", dsn).option("numPartitions", 2).load()
        df.write.format("noop").mode("overwrite").save()

    return timed(size, run)


def baseline(dsn: str, size: int) -> Measurement:
    spark = session()
    url, props = jdbc(dsn)
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT min(id), max(id) FROM mbus.events").fetchone()
    assert row is not None

    def run() -> None:
        df = spark.read.jdbc(
            url, _QUERY, column="id", lowerBound=row[0], upperBound=row[1] + 1,
            numPartitions=2, properties={**props, "fetchsize": "10000"},
        )
        df.write.format("noop").mode("overwrite").save()

    return timed(size, run)
