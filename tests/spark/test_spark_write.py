"""Writes: ``df.write.format("pgmbus")`` publishes rows as events or posts them to a queue."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest


def test_rows_become_events_by_option_or_by_column(spark: Any, db_dsn: str) -> None:
    rows = spark.createDataFrame(
        [
            ("a", '{"n": 1}', "k1", '{"src": "spark"}'),
            ("b", '{"n": 2}', None, None),
            ("a", '{"n": 3}', "k3", None),
        ],
        "topic string, payload string, key string, headers string",
    )
    rows.write.format("pgmbus").option("dsn", db_dsn).mode("append").save()
    rows.drop("topic").write.format("pgmbus").option("dsn", db_dsn).option("topic", "fixed").mode(
        "append"
    ).save()
    with psycopg.connect(db_dsn) as conn:
        got = conn.execute(
            "SELECT topic, key, payload, headers FROM mbus.events ORDER BY topic, payload->>'n'"
        ).fetchall()
    assert got == [
        ("a", "k1", {"n": 1}, {"src": "spark"}),
        ("a", "k3", {"n": 3}, None),
        ("b", None, {"n": 2}, None),
        ("fixed", "k1", {"n": 1}, {"src": "spark"}),
        ("fixed", None, {"n": 2}, None),
        ("fixed", "k3", {"n": 3}, None),
    ]


def test_bad_input_is_refused_before_any_task(spark: Any, db_dsn: str) -> None:
    df = spark.createDataFrame([(1,)], "n int")
    with pytest.raises(Exception, match="needs a 'payload' column"):
        df.write.format("pgmbus").option("dsn", db_dsn).option("topic", "t").mode("append").save()
    no_topic = spark.createDataFrame([('{"a": 1}',)], "payload string")
    with pytest.raises(Exception, match="give option topic"):
        no_topic.write.format("pgmbus").option("dsn", db_dsn).mode("append").save()
    bad_json = spark.createDataFrame([("not json",)], "payload string")
    with pytest.raises(Exception, match="json"):
        bad_json.write.format("pgmbus").option("dsn", db_dsn).option("topic", "t").mode(
            "append"
        ).save()
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM mbus.events").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM mbus.spark_staged").fetchone() == (0,)


def test_json_nested_too_deep_fails_the_write_and_publishes_nothing(
    spark: Any, db_dsn: str
) -> None:
    """Copied into the log, no reader could read it back (the 100-level rule of publish)."""
    deep = '{"a": ' + "[" * 150 + "]" * 150 + "}"
    brackets_in_a_string = '{"s": "' + "[" * 300 + '"}'  # many brackets, not deep: written
    for column, row in (("payload", (deep, None)), ("headers", ('{"n": 1}', deep))):
        df = spark.createDataFrame(
            [('{"n": 0}', None), (brackets_in_a_string, None), row],
            "payload string, headers string",
        ).repartition(1)
        with pytest.raises(Exception, match=f"{column} is nested more than 100 levels deep"):
            df.write.format("pgmbus").option("dsn", db_dsn).option("topic", "t").mode(
                "append"
            ).save()
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM mbus.events").fetchone() == (0,)
    spark.createDataFrame([(brackets_in_a_string,)], "payload string").write.format(
        "pgmbus"
    ).option("dsn", db_dsn).option("topic", "t").mode("append").save()
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM mbus.events").fetchone() == (1,)


def test_rows_posted_to_a_queue(spark: Any, db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        conn.execute("SELECT mbus.create_queue('spark_jobs')")
        conn.commit()
    from pyspark.sql import functions as F

    df = spark.range(0, 40, numPartitions=2).select(F.to_json(F.struct("id")).alias("payload"))
    df.write.format("pgmbus").option("dsn", db_dsn).option("queue", "spark_jobs").mode(
        "append"
    ).save()
    with psycopg.connect(db_dsn) as conn:
        got = conn.execute(
            "SELECT count(*), count(DISTINCT data->>'id') "
            "FROM mbus.consumen('spark_jobs', 'default', 100)"
        ).fetchone()
    assert got == (40, 40)
