"""Writes to topics: tasks copy events into the log, hidden until the driver's flip."""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg
import pytest

from pgmbus.errors import InvalidState
from pgmbus.spark.options import WriteOptions
from pgmbus.spark.writer import commit_write, discard_write, stage
from tests.spark.conftest import cursor_now, publish, read_sql


def _rows(*values: int) -> Any:
    import pyarrow as pa

    return pa.record_batch({"payload": [f'{{"v": {v}}}' for v in values]})


def _options(dsn: str) -> WriteOptions:
    return WriteOptions(dsn=dsn, topic="out", queue=None, sink="topic:out")


def _payloads(rows: list[Any]) -> list[Any]:
    return [r[3] for r in rows]


def _group_reads(dsn: str, group: str) -> list[Any]:
    """Everything the group reads now (mbus.read_next until empty), committed."""
    out: list[Any] = []
    with psycopg.connect(dsn) as conn:
        for _ in range(100):
            batch = conn.execute(
                "SELECT cursor, payload FROM mbus.read_next(%s, 1000)", (group,)
            ).fetchall()
            if batch:
                conn.execute("SELECT mbus.commit(%s, %s)", (group, batch[-1][0]))
            conn.commit()
            if not batch:
                return out
            out.extend(r[1] for r in batch)
    raise AssertionError("the group never caught up")


def test_events_stay_hidden_until_the_flip_and_no_reader_skips_them(db_dsn: str) -> None:
    options = _options(db_dsn)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_group('g', 'now')")
    start = cursor_now(db_dsn)
    task_a = stage(options, "w1", iter([_rows(1, 2)]))
    task_b = stage(options, "w1", iter([_rows(3)]))
    publish(db_dsn, "other", 1)  # committed after the tasks' transactions, before the flip
    during = cursor_now(db_dsn)  # a reader passes the tasks' transaction ids here
    with psycopg.connect(db_dsn) as conn:  # the rows are in the log, committed ...
        assert conn.execute("SELECT count(*) FROM mbus.events").fetchone() == (4,)
    # ... yet no reader sees them: the cursor range, a group, the Spark range read
    assert [r[1] for r in read_sql(db_dsn, start, during)] == ["other"]
    assert _group_reads(db_dsn, "g") == [{"n": 0}]
    assert commit_write(options, "w1", 0, [task_a, task_b]) == 3
    after = cursor_now(db_dsn)
    # read after the flip, from the cursor that had passed their ids: all, once
    assert sorted(p["v"] for p in _payloads(read_sql(db_dsn, during, after))) == [1, 2, 3]
    assert sorted(p["v"] for p in _group_reads(db_dsn, "g")) == [1, 2, 3]
    assert len(read_sql(db_dsn, start, after)) == 4
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM mbus.spark_pending").fetchone() == (0,)


def test_unreported_attempts_and_replays_are_never_published(db_dsn: str) -> None:
    options = _options(db_dsn)
    start = cursor_now(db_dsn)
    failed = stage(options, "q:4", iter([_rows(1)]))  # an attempt Spark does not report
    good = stage(options, "q:4", iter([_rows(1)]))
    assert failed.token != good.token
    assert commit_write(options, "q", 4, [good]) == 1
    replay = stage(options, "q:4", iter([_rows(1)]))  # the batch re-run after a driver crash
    assert commit_write(options, "q", 4, [replay]) == -1
    assert [r[3] for r in read_sql(db_dsn, start, cursor_now(db_dsn))] == [{"v": 1}]
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM mbus.events").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM mbus.spark_pending").fetchone() == (0,)


def test_the_commit_inserts_nothing_into_the_log(db_dsn: str) -> None:
    options = _options(db_dsn)
    tasks = [stage(options, "w-big", iter([_rows(*range(i, 2000, 4))])) for i in range(4)]
    with psycopg.connect(db_dsn) as conn:
        published = conn.execute(
            "SELECT mbus.spark_commit_write('topic:out', 'w-big', 0, 'w-big', %s, %s, 'topic')",
            ([t.token for t in tasks], sum(t.rows for t in tasks)),
        ).fetchone()
        touched = conn.execute(
            "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)"
            " FROM pg_stat_xact_user_tables WHERE relname LIKE 'events%%'"
        ).fetchone()
        conn.commit()
    assert published == (2000,)
    assert touched == (0,)  # O(tasks): one pending row per task deleted, no event written


def test_abort_and_abandoned_writes_delete_their_events(db_dsn: str) -> None:
    options = _options(db_dsn)
    start = cursor_now(db_dsn)
    aborted = stage(options, "w-abort", iter([_rows(1, 2)]))
    discard_write(options, [aborted])
    stage(options, "w-dead", iter([_rows(3)]))  # its driver died
    with psycopg.connect(db_dsn) as conn:  # a server crash empties the unlogged registry
        conn.execute("DELETE FROM mbus.spark_writes")
    future = dt.datetime.now(dt.UTC) + dt.timedelta(days=2)
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT mbus.spark_clean_staged(%s)", (future,)).fetchone() == (1,)
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM mbus.events").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM mbus.spark_pending").fetchone() == (0,)
    assert read_sql(db_dsn, start, cursor_now(db_dsn)) == []
    # a driver that commits after all is refused, and publishes nothing
    with pytest.raises(InvalidState, match="staged rows"):
        commit_write(options, "w-abort", 0, [aborted])


def test_pending_rows_and_events_commit_together(db_dsn: str) -> None:
    """A task's transaction that fails before it commits leaves neither events nor pending."""
    with psycopg.connect(db_dsn) as task:
        task.execute("INSERT INTO mbus.events (topic, payload) VALUES ('out', '{}')")
        task.execute("SELECT mbus.spark_mark_pending('w-x', 't-1', 1)")
        hidden = cursor_now(db_dsn)
        task.rollback()
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM mbus.spark_pending").fetchone() == (0,)
    assert read_sql(db_dsn, "1:1:", hidden) == []
