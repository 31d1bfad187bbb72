"""The SQL under the data source: admission control cuts, staged writes, the ledger."""

from __future__ import annotations

import datetime as dt

import psycopg
import pytest

from pgmbus.errors import InvalidState
from pgmbus.spark.options import WriteOptions
from pgmbus.spark.reader import RangePartition, read_partition
from pgmbus.spark.writer import StagedWrite, commit_write, stage
from tests.spark.conftest import cursor_now, publish, read_sql


def _next(dsn: str, start: str, end: str, n: int | None, before: object = None) -> str:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT mbus.spark_next_cursor(%s, %s, %s, NULL, %s)", (start, end, n, before)
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_next_cursor_cuts_batches_of_at_most_n_and_covers_all(db_dsn: str) -> None:
    publish(db_dsn, "t", 25)
    publish(db_dsn, "t", 1, start=100)
    end = cursor_now(db_dsn)
    start = "1:1:"
    seen: list[int] = []
    sizes = []
    while True:
        nxt = _next(db_dsn, start, end, 10)
        if nxt == start:
            break
        batch = [r[0] for r in read_sql(db_dsn, start, nxt)]
        sizes.append(len(batch))
        seen += batch
        start = nxt
    assert sizes == [10, 10, 6]  # one transaction of 25 is split, the next one follows
    assert seen == [r[0] for r in read_sql(db_dsn, "1:1:", end)]
    assert _next(db_dsn, start, cursor_now(db_dsn), None) == start  # nothing new: no batch


def test_next_cursor_stops_at_the_horizon(db_dsn: str) -> None:
    publish(db_dsn, "t", 5)
    with psycopg.connect(db_dsn) as conn:
        cut = conn.execute("SELECT max(published_at) FROM mbus.events").fetchone()
    publish(db_dsn, "t", 5, start=10)
    assert cut is not None
    horizon = cut[0] + dt.timedelta(microseconds=1)
    nxt = _next(db_dsn, "1:1:", cursor_now(db_dsn), None, horizon)
    assert [r[0] for r in read_sql(db_dsn, "1:1:", nxt)] == [
        r[0] for r in read_sql(db_dsn, "1:1:", cursor_now(db_dsn))
    ][:5]
    assert _next(db_dsn, nxt, cursor_now(db_dsn), None, horizon) == nxt


def test_partitions_split_a_range_without_overlap(db_dsn: str) -> None:
    publish(db_dsn, "t", 50)
    end = cursor_now(db_dsn)
    parts = [
        [b.to_pylist() for b in read_partition(db_dsn, RangePartition("1:1:", end, i, 3))]
        for i in range(3)
    ]
    ids = [row["id"] for part in parts for batch in part for row in batch]
    assert sorted(ids) == [r[0] for r in read_sql(db_dsn, "1:1:", end)]
    assert all(part for part in parts)


def test_staged_write_publishes_reported_attempts_once(db_dsn: str) -> None:
    import pyarrow as pa

    options = WriteOptions(dsn=db_dsn, topic="out", queue=None, sink="topic:out")
    rows = pa.record_batch({"payload": ['{"a": 1}', '{"a": 2}'], "key": ["x", None]})
    # A crashed run of batch 7 staged rows, then the re-run stages them again.
    stage(options, "q:7", iter([rows]))
    rerun = stage(options, "q:7", iter([rows]))
    assert commit_write(options, "q", 7, [rerun, None]) == 2
    assert commit_write(options, "q", 7, [rerun]) == -1  # the driver replays its commit
    with psycopg.connect(db_dsn) as conn:
        events = conn.execute("SELECT key, payload FROM mbus.events ORDER BY id").fetchall()
        staged = conn.execute("SELECT count(*) FROM mbus.spark_staged").fetchone()
    assert events == [("x", {"a": 1}), (None, {"a": 2})]
    assert staged == (0,)


def test_commit_refuses_when_staged_rows_are_missing(db_dsn: str) -> None:
    options = WriteOptions(dsn=db_dsn, topic="out", queue=None, sink="topic:out")
    lost = StagedWrite("q:1", "000000-0-lost", 5)
    with pytest.raises(InvalidState, match="5"):
        commit_write(options, "q", 1, [lost])
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM mbus.spark_batches").fetchone() == (0,)


def test_micro_batch_read_uses_the_txid_index(db_dsn: str) -> None:
    from psycopg import sql

    with psycopg.connect(db_dsn) as conn:
        conn.execute(
            "INSERT INTO mbus.events (topic, payload) "
            "SELECT 't', jsonb_build_object('n', g) FROM generate_series(1, 20000) AS g"
        )
        conn.commit()
        conn.execute("ANALYZE mbus.events")
        conn.commit()
    start = cursor_now(db_dsn)
    publish(db_dsn, "t", 10)
    end = cursor_now(db_dsn)
    query = sql.SQL("EXPLAIN SELECT * FROM mbus.spark_read({}, {}, NULL, 0, 2)").format(
        sql.Literal(start), sql.Literal(end)
    )
    with psycopg.connect(db_dsn) as conn:
        plan = "\n".join(r[0] for r in conn.execute(query))
        rows = conn.execute(
            "SELECT count(*) FROM mbus.spark_read(%s, %s)", (start, end)
        ).fetchone()
    assert "Index" in plan and "txid" in plan
    assert "Seq Scan on events_0000001" not in plan, plan
    assert rows == (10,)
