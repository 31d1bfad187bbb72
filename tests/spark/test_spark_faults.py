"""Faults: a killed driver, a failing task, retention while a stream lags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.spark.conftest import cursor_now, publish, read_sql

HERE = Path(__file__).resolve().parent


def _sink_table(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE TABLE seen (id bigint, topic text, payload text)")


def _driver(dsn: str, checkpoint: Path, *crash: str) -> int:
    env = dict(os.environ, PYTHONPATH=str(HERE.parent.parent))
    proc = subprocess.run(
        [sys.executable, str(HERE / "crash_driver.py"), dsn, str(checkpoint), *crash],
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )
    return proc.returncode


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_killed_driver_restarts_from_checkpoint_exactly_once(db_dsn: str, tmp_path: Path) -> None:
    _sink_table(db_dsn)
    publish(db_dsn, "t", 150)
    checkpoint = tmp_path / "ckpt"
    assert _driver(db_dsn, checkpoint, "1") == -9  # killed after batch 1 reached the table
    with psycopg.connect(db_dsn) as conn:
        done = conn.execute("SELECT count(*) FROM seen").fetchone()
    assert done == (80,)  # batches 0 and 1, and Spark has not recorded batch 1 as done
    assert _driver(db_dsn, checkpoint) == 0  # replays batch 1 (a no-op) and goes on
    with psycopg.connect(db_dsn) as conn:
        [(total, distinct)] = conn.execute(
            "SELECT count(*), count(DISTINCT id) FROM seen"
        ).fetchall()
        batches = conn.execute(
            "SELECT array_agg(batch_id ORDER BY batch_id) FROM mbus.spark_batches"
        ).fetchone()
        cursor = conn.execute("SELECT mbus.group_cursor('spark_crash')").fetchone()
    assert (total, distinct) == (150, 150)
    assert batches == ([0, 1, 2, 3],)
    assert cursor is not None and read_sql(db_dsn, cursor[0], cursor_now(db_dsn)) == []


def _flaky(marks: Path) -> Any:
    """A UDF that fails the first attempt of partition 0's task after some rows (and leaves a
    file in ``marks`` each time, so the test knows the failure happened)."""
    from pyspark.sql import functions as F

    folder = str(marks)

    @F.udf("string")
    def flaky(payload, n):  # type: ignore[no-untyped-def]  # hints would make it a pandas UDF
        import uuid

        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx is not None and ctx.attemptNumber() == 0 and ctx.partitionId() == 0 and n > 20:
            Path(folder, uuid.uuid4().hex).touch()
            raise RuntimeError("injected failure of a first attempt")
        return payload

    return flaky


def test_failed_first_attempt_does_not_duplicate_batch_write(
    spark: Any, db_dsn: str, tmp_path: Path
) -> None:
    from pyspark.sql import functions as F

    flaky = _flaky(tmp_path)
    rows = spark.range(0, 200, numPartitions=2).select(
        flaky(F.to_json(F.struct(F.col("id").alias("n"))), F.col("id")).alias("payload"),
        F.concat(F.lit("k"), F.col("id")).alias("key"),
    )
    rows.write.format("pgmbus").option("dsn", db_dsn).option("topic", "copied").mode(
        "append"
    ).save()
    with psycopg.connect(db_dsn) as conn:
        [(total, distinct)] = conn.execute(
            "SELECT count(*), count(DISTINCT payload->>'n') FROM mbus.events WHERE topic = 'copied'"
        ).fetchall()
        staged = conn.execute("SELECT count(*) FROM mbus.spark_staged").fetchone()
    assert (total, distinct) == (200, 200)
    assert staged == (0,)
    assert len(list(tmp_path.iterdir())) >= 1  # the first attempt did fail


def test_failed_first_attempt_does_not_duplicate_stream_to_topic(
    spark: Any, db_dsn: str, tmp_path: Path
) -> None:
    from pyspark.sql import functions as F

    publish(db_dsn, "in", 120)
    marks = tmp_path / "marks"
    marks.mkdir()
    flaky = _flaky(marks)
    events = (
        spark.readStream.format("pgmbus")
        .option("dsn", db_dsn)
        .option("group", "spark_copy")
        .option("startingPosition", "beginning")
        .option("maxEventsPerTrigger", "50")
        .load()
    )
    out = events.select(
        flaky(F.col("payload"), F.get_json_object("payload", "$.n").cast("int")).alias("payload"),
        F.col("key"),
        F.col("headers"),
    )
    query = (
        out.writeStream.format("pgmbus")
        .option("dsn", db_dsn)
        .option("topic", "out")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    with psycopg.connect(db_dsn) as conn:
        got = conn.execute(
            "SELECT payload, key, headers FROM mbus.events WHERE topic = 'out' ORDER BY id"
        ).fetchall()
        want = conn.execute(
            "SELECT payload, key, headers FROM mbus.events WHERE topic = 'in' ORDER BY id"
        ).fetchall()
        ledger = conn.execute("SELECT count(*) FROM mbus.spark_batches").fetchone()
    assert sorted(got, key=json.dumps) == sorted(want, key=json.dumps)
    assert len(got) == 120
    assert ledger == (3,)
    assert len(list(marks.iterdir())) >= 1  # first attempts did fail


def test_retention_keeps_what_the_stream_has_not_committed(
    spark: Any, db_dsn: str, tmp_path: Path
) -> None:
    import datetime as dt

    _sink_table(db_dsn)
    with psycopg.connect(db_dsn) as conn:
        [(now,)] = conn.execute("SELECT now()").fetchall()
        conn.execute("SELECT mbus.maintain(%s)", (now,))
    publish(db_dsn, "t", 100)

    def run(limit: int | None) -> None:
        from pgmbus.spark.sink import TableSink

        sink = TableSink(db_dsn, "seen")

        def process(df: Any, batch_id: int) -> None:
            if limit is not None and batch_id >= limit:
                raise RuntimeError("the consumer stops here")
            sink(df, batch_id)

        query = (
            spark.readStream.format("pgmbus")
            .option("dsn", db_dsn)
            .option("group", "spark_slow")
            .option("startingPosition", "beginning")
            .option("maxEventsPerTrigger", "30")
            .load()
            .select("id", "topic", "payload")
            .writeStream.foreachBatch(process)
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True)
            .start()
        )
        try:
            query.awaitTermination()
        except Exception:
            if limit is None:
                raise

    run(limit=1)  # one batch of 30 done; the query fails in batch 1
    with psycopg.connect(db_dsn) as conn:
        conn.execute("SELECT mbus.maintain(%s)", (now + dt.timedelta(days=2),))  # rolls over
        report = conn.execute("SELECT mbus.maintain(%s)", (now + dt.timedelta(days=30),))
        [(result,)] = report.fetchall()
        kept = result["kept"]
        left = conn.execute("SELECT count(*) FROM mbus.events WHERE topic = 't'").fetchone()
        conn.commit()
    assert left == (100,)
    assert any("spark_slow" in k["groups"] for k in kept)
    run(limit=None)
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*), count(DISTINCT id) FROM seen").fetchone() == (
            100,
            100,
        )
        conn.execute("SELECT mbus.maintain(%s)", (now + dt.timedelta(days=31),))
        gone = conn.execute("SELECT count(*) FROM mbus.events WHERE topic = 't'").fetchone()
    assert gone == (0,)  # read and committed: retention may drop it now
