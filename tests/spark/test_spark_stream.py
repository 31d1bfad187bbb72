"""Structured Streaming over a consumer group: every event once, offsets that replay, commits."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

from pgmbus.spark.sink import TableSink
from tests.spark.conftest import cursor_now, publish, read_sql


def _sink_table(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE TABLE seen (id bigint, topic text, payload text)")


def _seen(dsn: str) -> tuple[int, int, list[int]]:
    with psycopg.connect(dsn) as conn:
        [(total, distinct)] = conn.execute(
            "SELECT count(*), count(DISTINCT id) FROM seen"
        ).fetchall()
        ids = [r[0] for r in conn.execute("SELECT DISTINCT id FROM seen ORDER BY id")]
    return int(total), int(distinct), ids


def _stream(spark: Any, dsn: str, group: str, **options: str) -> Any:
    reader = (
        spark.readStream.format("pgmbus")
        .option("dsn", dsn)
        .option("group", group)
        .option("startingPosition", "beginning")
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load().select("id", "topic", "payload")


def test_stream_sees_every_event_once_with_producers_and_late_commits(
    spark: Any, db_dsn: str, tmp_path: Path
) -> None:
    _sink_table(db_dsn)
    publish(db_dsn, "t", 120)
    late = psycopg.connect(db_dsn)  # publishes first (lower txid and ids), commits last
    late.execute(
        "SELECT mbus.publish('t', jsonb_build_object('late', g)) FROM generate_series(1, 15) AS g"
    )

    def produce() -> None:
        rng = random.Random(7)
        with psycopg.connect(db_dsn) as conn:
            for i in range(30):
                conn.execute(
                    "SELECT mbus.publish('t', jsonb_build_object('p', %s, 'j', g)) "
                    "FROM generate_series(1, 5) AS g",
                    (i,),
                )
                if rng.random() < 0.2:
                    conn.rollback()  # never seen
                else:
                    conn.commit()
                time.sleep(rng.random() * 0.05)

    query = (
        _stream(spark, db_dsn, "spark_once", maxEventsPerTrigger="40")
        .writeStream.foreachBatch(TableSink(db_dsn, "seen"))
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        producer = threading.Thread(target=produce)
        producer.start()
        producer.join()
        time.sleep(1.0)
        late.commit()  # its events are older than what the stream has read: still delivered
        late.close()
        expected = [r[0] for r in read_sql(db_dsn, "1:1:", cursor_now(db_dsn), ["t"])]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _seen(db_dsn)[1] < len(expected):
            query.awaitTermination(0.5)
        batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    finally:
        query.stop()
    total, distinct, ids = _seen(db_dsn)
    assert ids == sorted(expected)
    assert total == distinct == len(expected)
    assert len(batches) >= 4
    assert max(p["numInputRows"] for p in batches) <= 40
    with psycopg.connect(db_dsn) as conn:  # Spark's commits moved the group
        left = conn.execute(
            "SELECT count(*) FROM mbus.read_between(mbus.group_cursor('spark_once'), "
            "mbus.current_cursor(), ARRAY['t'])"
        ).fetchone()
    assert left is not None and left[0] <= 40


def test_restart_resumes_from_checkpoint_and_group(spark: Any, db_dsn: str, tmp_path: Path) -> None:
    _sink_table(db_dsn)
    publish(db_dsn, "t", 60)
    checkpoint = str(tmp_path / "ckpt")

    def run() -> None:
        query = (
            _stream(spark, db_dsn, "spark_resume", maxEventsPerTrigger="25")
            .writeStream.foreachBatch(TableSink(db_dsn, "seen"))
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()

    run()
    assert _seen(db_dsn)[:2] == (60, 60)
    with psycopg.connect(db_dsn) as conn:  # the last batch was committed before the end
        row = conn.execute("SELECT mbus.group_cursor('spark_resume')").fetchone()
    assert row is not None and read_sql(db_dsn, row[0], cursor_now(db_dsn)) == []
    publish(db_dsn, "t", 30, start=100)
    run()
    assert _seen(db_dsn)[:2] == (90, 90)


def test_slotted_group_streams_every_event_once_and_commits_each_slot(
    spark: Any, db_dsn: str, tmp_path: Path
) -> None:
    _sink_table(db_dsn)
    with psycopg.connect(db_dsn) as conn:
        conn.execute("SELECT mbus.create_group('spark_slots', 'beginning', 2)")
    publish(db_dsn, "t", 50)
    query = (
        _stream(spark, db_dsn, "spark_slots", maxEventsPerTrigger="20")
        .writeStream.foreachBatch(TableSink(db_dsn, "seen"))
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    total, distinct, ids = _seen(db_dsn)
    assert (total, distinct) == (50, 50)
    assert ids == [r[0] for r in read_sql(db_dsn, "1:1:", cursor_now(db_dsn))]
    with psycopg.connect(db_dsn) as conn:
        for slot in (0, 1):  # each slot's cursor is at the end: nothing left to read
            row = conn.execute(
                "SELECT count(*) FROM mbus.read_between(mbus.group_cursor('spark_slots', %s), "
                "mbus.current_cursor(), NULL, %s, 2)",
                (slot, slot),
            ).fetchone()
            assert row == (0,)
