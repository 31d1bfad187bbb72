"""What a Spark write must survive when the server loses its unlogged staging tables.

``mbus.spark_staged`` and ``mbus.spark_writes`` are unlogged: crash recovery empties them and a
promoted standby starts with them empty. What must survive is logged: the ledger
``mbus.spark_batches``, what a commit published, and a topic write's pending events with their
``mbus.spark_pending`` rows. A queue write whose staged rows were lost must be refused at its
commit (``MB008``: Spark re-runs the batch), never published short. No Spark session: the
tasks' own code (:class:`~pgmbus.spark.writer.Stager`) stages, the driver's commit commits;
``disrupt`` is the fault (``kill -9`` and restart, or a failover) and returns the DSN to use.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pyarrow as pa
import pytest

from pgmbus.errors import InvalidState
from pgmbus.spark.options import WriteOptions
from pgmbus.spark.writer import StagedWrite, Stager, commit_tokens, row_targets
from tests.spark.conftest import cursor_now, read_sql

QUEUE, TOPIC, SINK = "crash_jobs", "crash_events", "pgmbus"


def _stage(options: WriteOptions, write_id: str, values: range) -> StagedWrite:
    """One task attempt: its rows staged (queue) or copied pending (topic), committed."""
    batch = pa.RecordBatch.from_pydict(
        {"key": [f"k{v % 3}" for v in values], "payload": [f'{{"v": {v}}}' for v in values]}
    )
    stager = Stager(options, options.dsn, write_id, f"{uuid.uuid4().hex}")
    try:
        stager.write(batch, row_targets(options, batch))
        return stager.finish()
    finally:
        stager.close()


def _commit(options: WriteOptions, query: str, batch: int, tasks: list[StagedWrite]) -> int:
    return commit_tokens(
        options.dsn,
        SINK,
        query,
        batch,
        tasks[0].write_id,
        [t.token for t in tasks],
        sum(t.rows for t in tasks),
        "queue" if options.queue else "topic",
    )


def _one(dsn: str, query: str, params: tuple[Any, ...] = ()) -> Any:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0] if len(row) == 1 else row


def _queued_values(dsn: str) -> list[int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT (data->>'v')::int FROM mbus.consumen(%s, 'default', 1000)", (QUEUE,)
        ).fetchall()
    return sorted(int(r[0]) for r in rows)


def check_exactly_once_across(dsn: str, disrupt: Callable[[], str]) -> None:
    """Commit a batch, leave another staged and a topic write pending, ``disrupt``, then check
    nothing committed is lost and nothing is published short or twice."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue(%s)", (QUEUE,))
    queue = WriteOptions(dsn=dsn, topic=None, queue=QUEUE, sink=SINK)
    topic = WriteOptions(dsn=dsn, topic=TOPIC, queue=None, sink=SINK)
    start = cursor_now(dsn)

    # batch 0 committed before the crash; batch 1 staged by two tasks, not yet committed;
    # a topic write copied pending by one task, not yet committed
    done = [_stage(queue, "q:0", range(0, 20)), _stage(queue, "q:0", range(20, 40))]
    assert _commit(queue, "q", 0, done) == 40
    in_flight = [_stage(queue, "q:1", range(40, 60)), _stage(queue, "q:1", range(60, 80))]
    pending = [_stage(topic, "t:0", range(0, 30))]
    assert _one(dsn, "SELECT count(*) FROM mbus.spark_staged") == 40

    dsn = disrupt()
    queue = WriteOptions(dsn=dsn, topic=None, queue=QUEUE, sink=SINK)
    topic = WriteOptions(dsn=dsn, topic=TOPIC, queue=None, sink=SINK)

    # the unlogged registries are gone; the logged ledger, queue and pending events are not
    assert _one(dsn, "SELECT count(*) FROM mbus.spark_staged") == 0
    assert _one(dsn, "SELECT count(*) FROM mbus.spark_writes") == 0
    assert _one(dsn, "SELECT count(*) FROM mbus.spark_pending WHERE write_id = 't:0'") == 1
    ledger = "SELECT count(*) FROM mbus.spark_batches WHERE query_id = %s AND batch_id = %s"
    assert _one(dsn, ledger, ("q", 0)) == 1

    # the in-flight batch's staged rows were lost: its commit refuses, changing nothing
    with pytest.raises(InvalidState, match="0 staged rows found, the tasks reported 40"):
        _commit(queue, "q", 1, in_flight)
    assert _one(dsn, ledger, ("q", 1)) == 0

    # a replay of the committed batch (Spark's checkpoint missed it) publishes nothing again
    assert _commit(queue, "q", 0, [_stage(queue, "q:0", range(0, 40))]) == -1
    # Spark re-runs batch 1 (new task attempts, new tokens): published once
    rerun = [_stage(queue, "q:1", range(40, 60)), _stage(queue, "q:1", range(60, 80))]
    assert _commit(queue, "q", 1, rerun) == 40
    assert _queued_values(dsn) == list(range(80)), "every row once: none lost, none twice"

    # the topic write's events and pending row are logged: its commit after the crash
    # publishes them, once, and nothing was visible before
    assert [r for r in read_sql(dsn, start, cursor_now(dsn), [TOPIC])] == []
    assert _commit(topic, "t", 0, pending) == 30
    events = read_sql(dsn, start, cursor_now(dsn), [TOPIC])
    assert sorted(int(e[3]["v"]) for e in events) == list(range(30))
    assert _one(dsn, "SELECT count(*) FROM mbus.spark_staged") == 0
    assert _one(dsn, "SELECT count(*) FROM mbus.spark_pending") == 0
