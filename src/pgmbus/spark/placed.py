"""Spark writes through the placement map: each row goes to the server its topic key maps to.

A write with option ``placementHome`` (instead of ``dsn``) reads the map once on the driver. A
placed queue is written on its server like any write. Rows for topics spread over several
servers are routed by key (:func:`pgmbus.scaleout.placement.server_for_key`, the function
:class:`~pgmbus.scaleout.Cluster` uses; a row without a key goes to the topic's first server):

1. each task attempt stages its rows on every server it has rows for, one
   :class:`~pgmbus.spark.writer.Stager` (a transaction, one ``COPY``) per server, and reports
   the ``(server, token, rows)`` parts;
2. the driver's commit records the decision, every server's reported parts, in
   ``mbus.spark_placed_commit`` on the home database, in one transaction: that is the commit
   point. It then settles each server with ``mbus.spark_commit_write`` (its own ledger makes a
   second settle of a server a no-op) and deletes the decision;
3. a decision left undone by a driver that died between two servers is finished by the next
   placed commit on that home, or by :func:`settle`: no server publishes a batch twice, and
   none keeps a decided batch unpublished. A re-run micro-batch (same query id and batch id)
   finds the decision and settles the recorded parts, dropping the re-run's rows.

Readers of one server see its part of a batch when that server is settled, so for a moment a
batch may be visible on one server and not yet on another; per-key order holds, since a key
lives on one server.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.compute as pc
from psycopg.types.json import Jsonb
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from pgmbus.data.spark import SPARK
from pgmbus.errors import ConfigurationError, PgmbusError, translating
from pgmbus.scaleout.placement import server_for_key
from pgmbus.spark.options import WriteOptions
from pgmbus.spark.writer import (
    StagedWrite,
    Stager,
    commit_tokens,
    discard_write,
    row_targets,
    stream_write_id,
    task_token,
)


@dataclass(frozen=True)
class TopicRoute:
    """Where a placed topic's keys go: its servers (names, in map order), their DSNs, and the
    hash scheme of the placement."""

    servers: tuple[str, ...]
    dsns: tuple[str, ...]
    scheme: str


Routes = dict[str, TopicRoute]
"""Per placed topic: its route."""


@dataclass(frozen=True)
class Part:
    """What one task attempt staged on one server."""

    dsn: str
    token: str
    rows: int


@dataclass
class PlacedWrite(WriterCommitMessage):
    """What a task reports: its parts on the servers it had rows for."""

    write_id: str
    parts: tuple[Part, ...]


def routes_of(home: str, options: WriteOptions) -> tuple[WriteOptions, Routes]:
    """Read the map on the driver: a placed queue's server, or the placed topics' servers.

    Returns the options to write with (``dsn`` = the queue's server, or the home) and the
    routes (empty for a queue). Raises ``ConfigurationError`` for an unreachable home and a
    topic or queue that is not placed.
    """
    from pgmbus.scaleout.placement import Cluster

    cluster = Cluster(home, refresh=3600.0)
    try:
        cluster.reload()
        if options.queue is not None:
            return replace(options, dsn=cluster.dsn_for(options.queue)), {}
        servers = cluster.servers()
        routes = {
            p.name: TopicRoute(p.servers, tuple(servers[n] for n in p.servers), p.scheme)
            for p in cluster.placements()
            if p.kind == "topic"
        }
    except psycopg.Error as exc:
        raise ConfigurationError(f"placement home is unreachable: {exc}") from exc
    except PgmbusError as exc:
        raise ConfigurationError(str(exc)) from exc
    finally:
        cluster.close()
    if options.topic is not None and options.topic not in routes:
        raise ConfigurationError(f"topic {options.topic!r} is not placed in the map")
    if not routes:
        raise ConfigurationError("no topic is placed in the map")
    return options, routes


def _servers_of(routes: Routes, topics: pa.Array, keys: pa.Array) -> list[str]:
    """The DSN of each row (``ConfigurationError`` for a topic not in the map)."""
    out: list[str] = []
    for topic, key in zip(topics.to_pylist(), keys.to_pylist(), strict=True):
        route = routes.get(topic) if topic is not None else None
        if route is None:
            raise ConfigurationError(f"topic {topic!r} of a row is not placed in the map")
        if key is None:
            out.append(route.dsns[0])
        else:
            server = server_for_key(key, route.servers, route.scheme)
            out.append(route.dsns[route.servers.index(server)])
    return out


def stage_placed(
    options: WriteOptions, routes: Routes, write_id: str, batches: Iterator[pa.RecordBatch]
) -> PlacedWrite:
    """Stage a task's rows on the servers their keys map to (one transaction per server)."""
    token = task_token()
    stagers: dict[str, Stager] = {}
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            targets = row_targets(options, batch)
            index = batch.schema.get_field_index("key")
            keys = batch.column(index) if index >= 0 else pa.nulls(batch.num_rows, pa.string())
            servers = pa.array(_servers_of(routes, targets, keys), pa.string())
            for dsn in pc.unique(servers).to_pylist():
                rows = pc.equal(servers, dsn)
                stager = stagers.get(dsn)
                if stager is None:
                    stager = stagers[dsn] = Stager(options, dsn, write_id, token)
                stager.write(batch.filter(rows), targets.filter(rows))
        parts = tuple(Part(dsn, token, s.finish().rows) for dsn, s in sorted(stagers.items()))
    finally:
        for stager in stagers.values():
            stager.close()
    return PlacedWrite(write_id, parts)


def _settle(home: str, decision: dict[str, Any]) -> None:
    """Settle every server of a decision (each idempotently), then forget the decision."""
    for part in decision["parts"]:
        commit_tokens(
            str(part["dsn"]),
            decision["sink"],
            decision["query_id"],
            int(decision["batch_id"]),
            decision["write_id"],
            [str(t) for t in part["tokens"]],
            int(part["rows"]),
            decision["kind"],
        )
        between_servers()
    with translating(), psycopg.connect(home) as conn:
        conn.execute(SPARK["placed_done"], decision)
        conn.commit()


def between_servers() -> None:
    """Called after each server is settled (a seam for fault tests)."""


def settle(home: str) -> int:
    """Finish the placed writes a driver decided but did not settle everywhere; how many.

    Every placed commit runs it first; run it yourself after a driver died mid-commit when no
    other placed write follows soon (the servers it did not settle hold their part of the batch
    back from readers until then).
    """
    with translating(), psycopg.connect(home) as conn:
        rows = conn.execute(SPARK["placed_undone"]).fetchall()
        conn.commit()
    names = ("sink", "query_id", "batch_id", "write_id", "kind", "parts")
    for row in rows:
        _settle(home, dict(zip(names, row, strict=True)))
    return len(rows)


def commit_placed(
    home: str,
    options: WriteOptions,
    routes: Routes,
    query_id: str,
    batch_id: int,
    messages: list[Any],
) -> None:
    """The driver's commit: decide on the home database, then settle every server."""
    placed = [m for m in messages if isinstance(m, PlacedWrite)]
    write_ids = {m.write_id for m in placed}
    if len(write_ids) > 1:
        raise ConfigurationError(f"tasks of one write reported different ids: {write_ids}")
    if not placed:
        return
    settle(home)  # an earlier driver's undone decision first
    by_server: dict[str, dict[str, Any]] = {}
    for dsn in sorted({d for route in routes.values() for d in route.dsns}):
        by_server[dsn] = {"dsn": dsn, "tokens": [], "rows": 0}  # every server: settles orphans
    for message in placed:
        for part in message.parts:
            entry = by_server.setdefault(part.dsn, {"dsn": part.dsn, "tokens": [], "rows": 0})
            entry["tokens"].append(part.token)
            entry["rows"] += part.rows
    key = {"sink": options.sink, "query_id": query_id, "batch_id": batch_id}
    queries = SPARK
    with translating(), psycopg.connect(home) as conn:
        conn.execute(
            queries["placed_decide"],
            key
            | {
                "write_id": placed[0].write_id,
                "kind": "topic",
                "parts": Jsonb(list(by_server.values())),
            },
        )
        row = conn.execute(queries["placed_decision"], key).fetchone()
        conn.commit()
    if row is None:  # settled by a concurrent settle() since: nothing left to do
        return
    write_id, kind, parts = row
    _settle(home, key | {"write_id": write_id, "kind": kind, "parts": parts})


def discard_placed(routes: Routes, options: WriteOptions, messages: list[Any]) -> None:
    """Drop what the tasks of an aborted write staged, on every server of the routes."""
    write_ids = {m.write_id for m in messages if isinstance(m, PlacedWrite)}
    dsns = {d for route in routes.values() for d in route.dsns}
    dsns |= {p.dsn for m in messages if isinstance(m, PlacedWrite) for p in m.parts}
    for dsn in sorted(dsns):
        staged = [StagedWrite(w, "", 0) for w in sorted(write_ids)]
        discard_write(replace(options, dsn=dsn), list(staged))


class PlacedWriter(DataSourceArrowWriter):
    """``df.write.format("pgmbus").option("placementHome", ...)`` to placed topics."""

    def __init__(self, options: WriteOptions, home: str, routes: Routes, write_id: str) -> None:
        self.options = options
        self.home = home
        self.routes = routes
        self.write_id = write_id

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PlacedWrite:
        return stage_placed(self.options, self.routes, self.write_id, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        commit_placed(self.home, self.options, self.routes, self.write_id, 0, list(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        discard_placed(self.routes, self.options, list(messages))


class PlacedStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("pgmbus").option("placementHome", ...)`` to placed topics."""

    def __init__(self, options: WriteOptions, home: str, routes: Routes) -> None:
        self.options = options
        self.home = home
        self.routes = routes

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PlacedWrite:
        query_id, batch_id = stream_write_id()
        return stage_placed(self.options, self.routes, f"{query_id}:{batch_id}", iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        placed = [m for m in messages if isinstance(m, PlacedWrite)]
        if placed:
            query_id = placed[0].write_id.rsplit(":", 1)[0]
            commit_placed(self.home, self.options, self.routes, query_id, batchId, placed)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        discard_placed(self.routes, self.options, list(messages))
