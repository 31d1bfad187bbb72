"""Batch reads: ``spark.read.format("pgmbus")`` equals the SQL answer for the same range."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import psycopg

from tests.spark.conftest import cursor_now, publish, read_sql


def _rows(df: Any) -> list[tuple[Any, ...]]:
    out = []
    for r in df.orderBy("id").collect():
        published = r.published_at.replace(tzinfo=dt.UTC)
        headers = json.loads(r.headers) if r.headers is not None else None
        out.append((r.id, r.topic, r.key, json.loads(r.payload), headers, published))
    return out


def test_batch_read_equals_sql_of_the_same_range(spark: Any, db_dsn: str) -> None:
    publish(db_dsn, "orders", 120)
    with psycopg.connect(db_dsn) as conn:  # a rolled-back transaction publishes nothing
        conn.execute("SELECT mbus.publish('orders', '{\"ghost\": true}')")
        conn.rollback()
    first = cursor_now(db_dsn)
    publish(db_dsn, "users", 40, start=1000)
    publish(db_dsn, "orders", 30, start=2000)
    last = cursor_now(db_dsn)

    df = spark.read.format("pgmbus").option("dsn", db_dsn).option("numPartitions", 3).load()
    assert df.rdd.getNumPartitions() == 3
    assert _rows(df) == read_sql(db_dsn, "1:1:", last)
    assert len(_rows(df)) == 190

    ranged = (
        spark.read.format("pgmbus")
        .option("dsn", db_dsn)
        .option("startingPosition", first)
        .option("endingPosition", last)
        .option("topics", "orders")
        .load()
    )
    assert _rows(ranged) == read_sql(db_dsn, first, last, ["orders"])
    assert len(_rows(ranged)) == 30


def test_filters_are_pushed_and_exact(spark: Any, db_dsn: str) -> None:
    publish(db_dsn, "a", 100)
    publish(db_dsn, "b", 50, start=500)
    every = read_sql(db_dsn, "1:1:", cursor_now(db_dsn))
    pivot = every[60][0]
    df = spark.read.format("pgmbus").option("dsn", db_dsn).load()

    filtered = df.where(f"key IN ('k1', 'k2') AND id > {pivot} AND topic = 'b'")
    expected = [r for r in every if r[2] in ("k1", "k2") and r[0] > pivot and r[1] == "b"]
    assert _rows(filtered) == expected and expected

    moment = every[30][5]
    recent = df.where(df.published_at >= moment.astimezone(dt.UTC).replace(tzinfo=None))
    assert [r[0] for r in _rows(recent)] == [r[0] for r in every if r[5] >= moment]
    plan = filtered._jdf.queryExecution().optimizedPlan().toString()
    assert "Filter" not in plan  # every condition was evaluated by the database


def test_empty_log_and_empty_parts_read_as_no_rows(spark: Any, db_dsn: str) -> None:
    def load() -> Any:
        return spark.read.format("pgmbus").option("dsn", db_dsn).option("numPartitions", 4).load()

    df = load()
    assert df.count() == 0
    publish(db_dsn, "a", 3)
    assert df.count() == 0  # a DataFrame keeps the snapshot of its first run: repeatable
    assert load().where("key = 'nope'").count() == 0
    assert load().count() == 3


def test_payload_parsed_with_a_user_schema(spark: Any, db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        conn.execute(
            "SELECT mbus.publish('p', jsonb_build_object('n', g, 'name', 'x' || g, "
            "'at', '2026-01-02T03:04:05Z', 'extra', true)) FROM generate_series(1, 5) AS g"
        )
        conn.execute("SELECT mbus.publish('p', '{\"name\": \"only\"}')")
    df = (
        spark.read.format("pgmbus")
        .option("dsn", db_dsn)
        .option("payloadSchema", "n bigint, name string, at timestamp")
        .load()
    )
    assert df.schema["payload"].dataType.simpleString() == (
        "struct<n:bigint,name:string,at:timestamp>"
    )
    rows = df.orderBy("id").select("payload.n", "payload.name", "payload.at").collect()
    assert [(r.n, r.name) for r in rows] == [(g, f"x{g}") for g in range(1, 6)] + [(None, "only")]
    assert rows[0].at == dt.datetime(2026, 1, 2, 3, 4, 5)
