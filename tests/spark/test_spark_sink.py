"""The exactly-once table sink: each micro-batch's rows land once, replays write nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pytest

from pgmbus.errors import ConfigurationError
from pgmbus.spark.sink import TableSink


def _create(dsn: str, ddl: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(ddl)


def test_replayed_batch_writes_nothing(db_dsn: str) -> None:
    _create(db_dsn, "CREATE TABLE out_rows (n bigint, label text)")
    sink = TableSink(db_dsn, "public.out_rows")
    rows = pa.table({"n": [1, 2, 3], "label": ["a", None, ""]})
    assert sink.write(rows, "q1", 0) is True
    assert sink.write(rows, "q1", 0) is False  # the same batch again: a replay
    assert sink.write(rows, "q2", 0) is True  # another query is another ledger entry
    with psycopg.connect(db_dsn) as conn:
        got = conn.execute("SELECT n, label FROM out_rows ORDER BY n, label").fetchall()
        ledger = conn.execute(
            "SELECT sink, query_id, batch_id, row_count FROM mbus.spark_batches ORDER BY 2"
        ).fetchall()
    assert got == [(1, "a"), (1, "a"), (2, None), (2, None), (3, ""), (3, "")]
    assert ledger == [("table:public.out_rows", "q1", 0, 3), ("table:public.out_rows", "q2", 0, 3)]


def test_upsert_on_key_columns(db_dsn: str) -> None:
    _create(db_dsn, "CREATE TABLE counts (name text PRIMARY KEY, n bigint)")
    sink = TableSink(db_dsn, "counts", key_columns=["name"])
    sink.write(pa.table({"name": ["a", "b"], "n": [1, 1]}), "q", 0)
    sink.write(pa.table({"name": ["b", "c"], "n": [5, 1]}), "q", 1)
    sink.write(pa.table({"name": ["b"], "n": [99]}), "q", 1)  # replay of batch 1: ignored
    with psycopg.connect(db_dsn) as conn:
        got = conn.execute("SELECT name, n FROM counts ORDER BY name").fetchall()
    assert got == [("a", 1), ("b", 5), ("c", 1)]


def test_failed_write_leaves_no_claim(db_dsn: str) -> None:
    _create(db_dsn, "CREATE TABLE strict_rows (n bigint NOT NULL)")
    sink = TableSink(db_dsn, "strict_rows")
    with pytest.raises(Exception, match="null value"):
        sink.write(pa.table({"n": pa.array([1, None], pa.int64())}), "q", 0)
    assert sink.write(pa.table({"n": [7]}), "q", 0) is True  # the batch can be retried
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT array_agg(n) FROM strict_rows").fetchone() == ([7],)


def test_bad_names_are_refused(db_dsn: str) -> None:
    with pytest.raises(ConfigurationError, match="invalid table name"):
        TableSink(db_dsn, "a.b.c")
    sink = TableSink(db_dsn, "t", key_columns=["missing"])
    with pytest.raises(ConfigurationError, match="key columns"):
        sink.write(pa.table({"n": [1]}), "q", 0)


def test_streaming_query_through_sink(spark: Any, db_dsn: str, tmp_path: Path) -> None:
    """A real streaming query (file source, availableNow) writes each batch once."""
    _create(db_dsn, "CREATE TABLE seen (n bigint, word text)")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for i in range(3):
        lines = [json.dumps({"n": i * 10 + j, "word": f"w{j}"}) for j in range(10)]
        (inbox / f"part{i}.json").write_text("\n".join(lines))
    checkpoint = str(tmp_path / "ckpt")

    def run() -> None:
        df = (
            spark.readStream.schema("n bigint, word string")
            .option("maxFilesPerTrigger", 1)
            .json(str(inbox))
        )
        query = (
            df.writeStream.foreachBatch(TableSink(db_dsn, "seen"))
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()

    run()
    run()  # a restart from the checkpoint finds nothing new
    with psycopg.connect(db_dsn) as conn:
        [(n, distinct)] = conn.execute("SELECT count(*), count(DISTINCT n) FROM seen").fetchall()
        batches = conn.execute("SELECT count(*) FROM mbus.spark_batches").fetchone()
    assert (n, distinct) == (30, 30)
    assert batches == (3,)
