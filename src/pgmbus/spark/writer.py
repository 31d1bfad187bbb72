"""Writers of the ``pgmbus`` data source: Spark rows become stream events or queue messages.

Exactly once per write (a batch ``df.write`` or one micro-batch of ``writeStream``):

1. each task attempt writes its rows under a token of its own (a retried task writes again
   under a new token) and reports ``(write id, token, row count)``. To topics it copies them
   straight into ``mbus.events`` and records its transaction in ``mbus.spark_pending`` in the
   same transaction: readers' snapshots count that transaction as in progress, so the events
   stay invisible. To queues it stages them in ``mbus.spark_staged``;
2. the driver's commit calls ``mbus.spark_commit_write``, which in one transaction records
   ``(sink, query id, batch id)`` in the ledger and publishes only the attempts Spark reported:
   for topics by deleting their pending rows (the flip, O(tasks): the events of unreported
   attempts are deleted first), for queues by posting the staged rows.

A batch re-run after a driver crash finds its ledger row and publishes nothing again; rows of
failed attempts are never published. A streaming write's id is ``<query id>:<batch id>``, read
from the task's local properties, so a re-run of the same batch replaces the staged rows of the
crashed run.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StringType, StructType

from pgmbus.data.spark import SPARK
from pgmbus.errors import ConfigurationError, InvalidPayload, translating
from pgmbus.json_depth import MAX_DEPTH, text_deeper_than
from pgmbus.spark.arrowio import csv_bytes
from pgmbus.spark.options import WriteOptions

_STAGED_COLUMNS = ("write_id", "token", "seq", "target", "key", "payload", "headers")


@dataclass
class StagedWrite(WriterCommitMessage):
    """What a task reports: its rows are staged under ``token`` in ``write_id``."""

    write_id: str
    token: str
    rows: int


def check_schema(schema: StructType, options: WriteOptions) -> None:
    """Refuse input the writer cannot map to events or messages, naming what is wrong."""
    fields = {f.name: f.dataType for f in schema.fields}
    if "payload" not in fields:
        raise ConfigurationError(
            "the pgmbus writer needs a 'payload' column (JSON text); "
            "for whole rows use to_json(struct(*)) AS payload"
        )
    for name in ("payload", "key", "headers", "topic"):
        if name in fields and not isinstance(fields[name], StringType):
            raise ConfigurationError(
                f"column {name!r} must be a string (JSON text for payload and headers), "
                f"not {fields[name].simpleString()}"
            )
    if options.queue is None and options.topic is None and "topic" not in fields:
        raise ConfigurationError(
            "give option topic (or queue), or a 'topic' column naming each row's topic"
        )


def task_token() -> str:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    part = ctx.partitionId() if ctx is not None else 0
    attempt = ctx.attemptNumber() if ctx is not None else 0
    return f"{part:06d}-{attempt}-{uuid.uuid4().hex}"


def _column(batch: pa.RecordBatch, name: str) -> pa.Array:
    index = batch.schema.get_field_index(name)
    if index < 0:
        return pa.nulls(batch.num_rows, pa.string())
    return batch.column(index)


def check_depth(batch: pa.RecordBatch, first_row: int) -> None:
    """Refuse a payload or headers nested more than MAX_DEPTH levels (``mbus.json_too_deep``):
    copied into the log, no reader could read it back, and it would stop every reader of the
    topic's groups. Only texts with more opening brackets than the limit can be that deep, so
    the exact scan runs on those alone (a vectorized count first)."""
    for name in ("payload", "headers"):
        column = _column(batch, name)
        if column.null_count == len(column):
            continue
        opening = pc.add(pc.count_substring(column, "["), pc.count_substring(column, "{"))
        for index in pc.indices_nonzero(pc.fill_null(pc.greater(opening, MAX_DEPTH), False)):
            text = column[index.as_py()].as_py()
            if text is not None and text_deeper_than(text):
                raise InvalidPayload(
                    f"row {first_row + index.as_py()} of the task: {name} is nested more than "
                    f"{MAX_DEPTH} levels deep",
                    sqlstate="MB005",
                )


def row_targets(options: WriteOptions, batch: pa.RecordBatch) -> pa.Array:
    if options.queue is None and options.topic is None:
        return _column(batch, "topic")
    return pa.array([options.queue or options.topic] * batch.num_rows, pa.string())


class Stager:
    """One task attempt's staging on one server: a transaction with one ``COPY`` open.

    Opened, it has registered the write and holds its lock shared; :meth:`write` copies rows
    (into the log, pending, for topics; into ``mbus.spark_staged`` for queues); :meth:`finish`
    records the attempt (topics) and commits. A task writing to several servers (a write
    through the placement map) keeps one per server.
    """

    def __init__(self, options: WriteOptions, dsn: str, write_id: str, token: str) -> None:
        self.options = options
        self.write_id = write_id
        self.token = token
        self.rows = 0
        self.to_log = options.queue is None
        self._queries = SPARK
        self._conn = psycopg.connect(dsn)
        self._cursor: psycopg.Cursor[Any] | None = None
        self._copy_cm: Any = None  # the cursor's copy() context, open while rows are copied
        self._copy: Any = None
        try:
            with translating():
                # registered in a transaction of its own (tasks of a write never wait for each
                # other), then written holding the write's lock shared (the cleanup leaves the
                # rows alone)
                self._conn.execute(self._queries["begin_stage"], {"write_id": write_id})
                self._conn.commit()
                self._conn.execute(self._queries["lock_stage"], {"write_id": write_id})
                if self.to_log:
                    self._conn.execute(self._queries["check_log"])
                statement = self._queries["events_copy" if self.to_log else "stage_copy"]
                self._cursor = self._conn.cursor()
                self._copy_cm = self._cursor.copy(statement)
                self._copy = self._copy_cm.__enter__()
        except BaseException:
            self.close()
            raise

    def write(self, batch: pa.RecordBatch, targets: pa.Array) -> None:
        """Copy the rows of ``batch`` (``targets``: each row's topic or queue)."""
        n = batch.num_rows
        if n == 0:
            return
        check_depth(batch, self.rows)
        columns = [
            targets,
            _column(batch, "key"),
            _column(batch, "payload"),
            _column(batch, "headers"),
        ]
        if self.to_log:
            table = pa.table(columns, names=["topic", "key", "payload", "headers"])
        else:
            table = pa.table(
                [
                    pa.array([self.write_id] * n, pa.string()),
                    pa.array([self.token] * n, pa.string()),
                    pa.array(range(self.rows, self.rows + n), pa.int64()),
                    *columns,
                ],
                names=list(_STAGED_COLUMNS),
            )
        with translating():
            self._copy.write(csv_bytes(table))
        self.rows += n

    def finish(self) -> StagedWrite:
        """End the copy, record the attempt (topics) and commit; what the task reports."""
        with translating():
            cm, self._copy_cm, self._copy = self._copy_cm, None, None
            cm.__exit__(None, None, None)
            if self.to_log:
                self._conn.execute(
                    self._queries["mark_pending"],
                    {"write_id": self.write_id, "token": self.token, "rows": self.rows},
                )
            self._conn.commit()
        self.close()
        return StagedWrite(self.write_id, self.token, self.rows)

    def close(self) -> None:
        """Roll back what is not finished and close the connection."""
        if self._copy_cm is not None:
            cm, self._copy_cm, self._copy = self._copy_cm, None, None
            failed = RuntimeError("the task failed")
            with contextlib.suppress(Exception):
                cm.__exit__(RuntimeError, failed, None)
        self._conn.close()


def stage(options: WriteOptions, write_id: str, batches: Iterator[pa.RecordBatch]) -> StagedWrite:
    """Write every row of a task under a fresh token, in one transaction (``COPY`` of CSV):
    into the log, pending, for topics; into ``mbus.spark_staged`` for queues."""
    stager = Stager(options, options.dsn, write_id, task_token())
    try:
        for batch in batches:
            stager.write(batch, row_targets(options, batch))
        return stager.finish()
    finally:
        stager.close()


def commit_tokens(
    dsn: str,
    sink: str,
    query_id: str,
    batch_id: int,
    write_id: str,
    tokens: list[str],
    expected: int,
    kind: str,
) -> int:
    """``mbus.spark_commit_write`` on one server: publish the attempts ``tokens`` staged there
    (and drop the others' rows); ``-1`` when that server committed the batch before."""
    with psycopg.connect(dsn) as conn, translating():
        row = conn.execute(
            SPARK["commit_write"],
            {
                "sink": sink,
                "query_id": query_id,
                "batch_id": batch_id,
                "write_id": write_id,
                "tokens": tokens,
                "expected": expected,
                "kind": kind,
            },
        ).fetchone()
        conn.commit()
    return int(row[0]) if row else 0


def commit_write(options: WriteOptions, query_id: str, batch_id: int, messages: list[Any]) -> int:
    """Publish the staged rows of the reported tokens; ``-1`` when the batch was done before."""
    staged = [m for m in messages if isinstance(m, StagedWrite)]
    if not staged:
        return 0
    write_ids = {m.write_id for m in staged}
    if len(write_ids) != 1:
        raise ConfigurationError(f"tasks of one write reported different ids: {write_ids}")
    return commit_tokens(
        options.dsn,
        options.sink,
        query_id,
        batch_id,
        staged[0].write_id,
        [m.token for m in staged],
        sum(m.rows for m in staged),
        "queue" if options.queue else "topic",
    )


def discard_write(options: WriteOptions, messages: list[Any]) -> None:
    """Drop the staged rows of an aborted write."""
    write_ids = {m.write_id for m in messages if isinstance(m, StagedWrite)}
    if not write_ids:
        return
    with psycopg.connect(options.dsn) as conn, translating():
        for write_id in sorted(write_ids):
            conn.execute(SPARK["discard_write"], {"write_id": write_id})
        conn.commit()


class PgmbusWriter(DataSourceArrowWriter):
    """``df.write.format("pgmbus")``: the whole write is published exactly once, or not at all."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options
        self.write_id = f"write-{uuid.uuid4().hex}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedWrite:
        return stage(self.options, self.write_id, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        commit_write(self.options, self.write_id, 0, list(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        discard_write(self.options, list(messages))


def stream_write_id() -> tuple[str, int]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    query_id = ctx.getLocalProperty("sql.streaming.queryId") if ctx is not None else None
    batch = ctx.getLocalProperty("streaming.sql.batchId") if ctx is not None else None
    if not query_id or batch is None:
        raise ConfigurationError("the pgmbus stream writer runs only inside a streaming query")
    return query_id, int(batch)


class PgmbusStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("pgmbus")``: each micro-batch is published exactly once."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedWrite:
        query_id, batch_id = stream_write_id()
        return stage(self.options, f"{query_id}:{batch_id}", iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        staged = [m for m in messages if isinstance(m, StagedWrite)]
        if not staged:
            return
        query_id = staged[0].write_id.rsplit(":", 1)[0]
        commit_write(self.options, query_id, batchId, list(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        discard_write(self.options, list(messages))
