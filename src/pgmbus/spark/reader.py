"""Readers of the ``pgmbus`` data source: batch reads and Structured Streaming over a group.

Offsets are the streams engine's snapshot cursors (strings). A range ``(from, to]`` is the set
of events whose transactions are visible in ``to`` and not in ``from``; ``mbus.read_between`` is
a pure function of the range, so a replayed micro-batch returns exactly the same events, and no
event is skipped when transactions commit out of id order. Partitions split a range into
``numPartitions`` parts by event id (``mbus.spark_read``), one Spark task each.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import psycopg
import pyarrow as pa
from psycopg import sql
from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamReader,
    Filter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from pgmbus.data.spark import SPARK
from pgmbus.errors import AlreadyExists, ConfigurationError, translating
from pgmbus.spark import filters
from pgmbus.spark.arrowio import read_events
from pgmbus.spark.options import ReadOptions


@dataclass
class RangePartition(InputPartition):
    """One Spark task's share of a range: slot ``slot`` of ``nslots`` of ``(start, end]`` (by
    ``id``), and of a slotted group only the events of key slot ``key_slot`` of ``key_nslots``
    (``mbus.key_slot``)."""

    start: str
    end: str
    slot: int
    nslots: int
    pushed: filters.Pushed = field(default_factory=filters.Pushed)
    key_slot: int | None = None
    key_nslots: int | None = None
    dsn: str | None = None  # the server to read (a placed read); None: the dsn option


def _scalar(dsn: str, query: str, params: dict[str, Any]) -> Any:
    with psycopg.connect(dsn, autocommit=True) as conn, translating():
        row = conn.execute(SPARK[query], params).fetchone()
    return row[0] if row else None


def current_cursor(dsn: str) -> str:
    """A cursor of the database's present: every committed event is before it.

    Future-dated events whose time has come are moved into the log first (their own
    transaction, ``mbus.release_scheduled``), so the cursor covers them.
    """
    _scalar(dsn, "release_scheduled", {})
    return str(_scalar(dsn, "current_cursor", {}))


def beginning_cursor(dsn: str) -> str:
    """A cursor before every event."""
    return str(_scalar(dsn, "beginning_cursor", {}))


def resolve_position(dsn: str, position: str | None, default: str) -> str:
    """Turn ``beginning``, ``now``/``latest`` or a cursor string into a cursor."""
    value = (position or default).strip()
    if value == "beginning":
        return beginning_cursor(dsn)
    if value in ("now", "latest"):
        return current_cursor(dsn)
    return value


def read_partition(
    dsn: str, part: RangePartition, payload_type: Any = None
) -> Iterator[pa.RecordBatch]:
    """The events of one partition as Arrow batches (a pure function of the partition)."""
    params = {
        "from_cursor": part.start,
        "to_cursor": part.end,
        "topics": list(part.pushed.topics) if part.pushed.topics is not None else None,
        "slot": part.slot,
        "nslots": part.nslots,
        "key_slot": part.key_slot,
        "key_nslots": part.key_nslots,
        **part.pushed.params(),
    }
    # Literals, not parameters: the cursors must be constants when the query is planned.
    template = sql.SQL(SPARK["read_range"])
    query = template.format(**{k: sql.Literal(v) for k, v in params.items()}).as_string(None)
    with translating():
        yield from read_events(dsn, query, payload_type)


def _read(dsn: str, partition: InputPartition, payload_type: Any) -> Iterator[pa.RecordBatch]:
    # An empty plan (no parts) reaches read() as Spark's default InputPartition(None).
    if not isinstance(partition, RangePartition):
        return iter(())
    return read_partition(partition.dsn or dsn, partition, payload_type)


def split(
    start: str,
    end: str,
    nslots: int,
    pushed: filters.Pushed,
    bounds: tuple[int | None, int | None] | None = None,
) -> list[RangePartition]:
    """The partitions of a range (none when the range is empty).

    With ``bounds`` (the log's lowest and highest id), each part is an id interval, read by a
    range scan: right for large batch reads. Without, parts are ``id % nslots``: right for
    micro-batches, whose few recent transactions are found through the txid index.
    """
    if start == end or (pushed.topics is not None and not pushed.topics):
        return []
    if pushed.keys is not None and not pushed.keys:
        return []
    if bounds is None:
        return [RangePartition(start, end, slot, nslots, pushed) for slot in range(nslots)]
    lo, hi = bounds
    if lo is None or hi is None:
        return []
    lo = max(lo, pushed.id_min) if pushed.id_min is not None else lo
    hi = min(hi, pushed.id_max) if pushed.id_max is not None else hi
    if lo > hi:
        return []
    step = (hi - lo) // nslots + 1
    return [
        RangePartition(
            start,
            end,
            0,
            1,
            replace(pushed, id_min=a, id_max=min(a + step - 1, hi)),
        )
        for a in range(lo, hi + 1, step)
    ]


def placed_dsns(home: str, topics: tuple[str, ...]) -> list[str]:
    """The servers of ``topics`` in the placement map on ``home``, each once.

    Raises ``NotFound`` for a topic the map does not hold, ``ConfigurationError`` when the
    home database cannot be reached.
    """
    from pgmbus.scaleout.placement import Cluster

    with Cluster(home) as cluster:
        try:
            cluster.reload()
        except psycopg.OperationalError as exc:
            raise ConfigurationError(f"placement home is unreachable: {exc}") from exc
        return list(dict.fromkeys(d for t in topics for d in cluster.topic_dsns(t)))


class PgmbusBatchReader(DataSourceReader):
    """``spark.read.format("pgmbus")``: the events of a range, by default all committed ones."""

    def __init__(self, options: ReadOptions, payload_type: Any = None) -> None:
        self.options = options
        self.payload_type = payload_type
        self.pushed = filters.Pushed(
            topics=options.topics,
            time_lt=options.published_before,
            subscription_id=options.subscription_id,
        )

    def pushFilters(self, filters_: list[Filter]) -> Iterator[Filter]:
        self.pushed, remaining = filters.push(self.pushed, filters_, self.pushed.topics)
        return remaining

    def partitions(self) -> list[RangePartition]:
        if self.options.placement_home is None:
            return self._partitions(self.options.dsn)
        # every server of the placed topics, each split by its own ids (read once each)
        return [
            replace(part, dsn=dsn)
            for dsn in placed_dsns(self.options.placement_home, self.options.topics or ())
            for part in self._partitions(dsn)
        ]

    def _partitions(self, dsn: str) -> list[RangePartition]:
        start = resolve_position(dsn, self.options.starting_position, "beginning")
        end = resolve_position(dsn, self.options.ending_position, "latest")
        with psycopg.connect(dsn, autocommit=True) as conn, translating():
            row = conn.execute(SPARK["id_bounds"]).fetchone()
        bounds = (row[0], row[1]) if row else (None, None)
        return split(start, end, self.options.num_partitions, self.pushed, bounds)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options.dsn, partition, self.payload_type)


class PgmbusPlainBatchReader(PgmbusBatchReader):
    """The batch reader for sessions with Python filter push-down off: Spark applies every
    filter after the read (only the ``topics`` and ``publishedBefore`` options narrow it)."""

    # Spark refuses a reader that overrides pushFilters while push-down is off
    pushFilters = DataSourceReader.pushFilters  # type: ignore[assignment]


class PgmbusStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("pgmbus")``: micro-batches of a consumer group.

    The offset is ``{"cursor": <cursor>}``, or for a group split into key slots
    ``{"slots": [<cursor of slot 0>, ...]}``: each slot moves on its own (the group's slots may
    stand at different positions) and is read by input partitions of its own, one per slot.
    ``commit(end)`` advances the group's cursors in the database (which lets retention drop what
    every group has read). An idle trigger (no new events) also commits its start, which is
    complete by then: so the last batch of an ``availableNow`` run is committed before the run
    ends.
    """

    def __init__(self, options: ReadOptions, payload_type: Any = None) -> None:
        self.options = options
        self.payload_type = payload_type
        self.pushed = filters.Pushed(topics=options.topics, subscription_id=options.subscription_id)
        self._target: str | None = None
        self._committed: set[str] = set()

    def initialOffset(self) -> dict[str, Any]:
        dsn, group = self.options.dsn, self.options.group
        if group is None:
            return {"cursor": resolve_position(dsn, self.options.starting_position, "now")}
        with contextlib.suppress(AlreadyExists):
            _scalar(
                dsn,
                "create_group",
                {"group": group, "start": self.options.starting_position or "now"},
            )
        slots = _scalar(dsn, "group_slots", {"group": group})
        if slots is not None and slots > 1:
            return {
                "slots": [
                    str(_scalar(dsn, "group_slot_cursor", {"group": group, "slot": i}))
                    for i in range(slots)
                ]
            }
        return {"cursor": str(_scalar(dsn, "group_cursor", {"group": group}))}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_events_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.options.max_events_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = current_cursor(self.options.dsn)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        upper = self._target or current_cursor(self.options.dsn)
        max_events = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        if "slots" in start:
            # Each slot's batch holds at most max_events events of the log (of every key), so
            # the slots together read about max_events per trigger.
            ends = [
                _with_slot(cursor, self._next(_slot_body(cursor), upper, max_events))
                for cursor in start["slots"]
            ]
            end: dict[str, Any] = {"slots": ends}
        else:
            end = {"cursor": self._next(start["cursor"], upper, max_events)}
        if end == start:
            self._commit(start)
        return end

    def _next(self, start: str, upper: str, max_events: int | None) -> str:
        return str(
            _scalar(
                self.options.dsn,
                "next_cursor",
                {
                    "from_cursor": start,
                    "to_cursor": upper,
                    "max_events": max_events,
                    "before": self.options.published_before,
                    "topics": list(self.pushed.topics) if self.pushed.topics else None,
                },
            )
        )

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[RangePartition]:
        if "slots" in start:
            n = len(start["slots"])
            return [
                RangePartition(a, b, 0, 1, self.pushed, key_slot=i, key_nslots=n)
                for i, (a, b) in enumerate(zip(start["slots"], end["slots"], strict=True))
                if a != b and not (self.pushed.topics is not None and not self.pushed.topics)
            ]
        return split(start["cursor"], end["cursor"], self.options.num_partitions, self.pushed)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options.dsn, partition, self.payload_type)

    def commit(self, end: dict[str, Any]) -> None:
        self._commit(end)

    def _commit(self, offset: dict[str, Any]) -> None:
        if self.options.group is None:
            return
        cursors = list(offset["slots"]) if "slots" in offset else [offset["cursor"]]
        for cursor in cursors:
            if cursor not in self._committed:
                _scalar(
                    self.options.dsn,
                    "commit_group",
                    {"group": self.options.group, "cursor": cursor},
                )
        self._committed = set(cursors)


def _slot_body(cursor: str) -> str:
    """A slot's cursor (``<slot>@<position>``) without its slot."""
    return cursor.split("@", 1)[1] if "@" in cursor else cursor


def _with_slot(slot_cursor: str, body: str) -> str:
    """``body`` with the slot of ``slot_cursor``."""
    return f"{slot_cursor.split('@', 1)[0]}@{body}" if "@" in slot_cursor else body
