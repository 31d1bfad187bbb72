"""``spark.readStream`` through the placement map: one consumer group per server, one offset.

The servers are those the map on the home database gives the placed ``topics``, by name. Each
server is read by an ordinary :class:`~pgmbus.spark.reader.PgmbusStreamReader` (its group, its
cursors, slotted or not); the query's offset holds them all, ``{"servers": {name: offset}}``, so
Spark's checkpoint moves every server's position together and a micro-batch is the events
between the two combined offsets, each read once. ``commit`` advances every server's group.
The map is read again at every trigger: a server that becomes readable (added to a topic, or
held back during a change of the topic's servers until then) joins the query there, its group
created (when missing) at the query's start time (at its beginning without a group, or with
``startingPosition=beginning``), so none of its events is skipped; the offset of a server missing
from a checkpointed offset is its group's initial offset.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import psycopg
import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow

from pgmbus.errors import ConfigurationError, PgmbusError
from pgmbus.spark.options import ReadOptions
from pgmbus.spark.reader import PgmbusStreamReader, RangePartition, _read

log = logging.getLogger("pgmbus.spark")


def placed_servers(home: str, topics: tuple[str, ...]) -> dict[str, str]:
    """Name and DSN of every server to read for ``topics`` in the map on ``home`` (each once;
    during a change of a topic's servers, not the ones held back: a key's old events first)."""
    from pgmbus.scaleout.placement import Cluster

    with Cluster(home, refresh=3600.0) as cluster:
        try:
            cluster.reload()
            dsns = cluster.servers()
            names = dict.fromkeys(
                name for t in topics for name in cluster.placement("topic", t).readable()
            )
        except psycopg.OperationalError as exc:
            raise ConfigurationError(f"placement home is unreachable: {exc}") from exc
        except PgmbusError as exc:
            raise ConfigurationError(str(exc)) from exc
    return {name: dsns[name] for name in names}


class PlacedStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``readStream`` with ``placementHome``: the placed topics of every server, exactly once."""

    def __init__(self, options: ReadOptions, payload_type: Any = None) -> None:
        self.options = options
        self.payload_type = payload_type
        self.home = options.placement_home or options.dsn
        # a server joining later starts its new group here unless the read starts at the
        # beginning: the events published on it while the query ran are never skipped
        start = options.starting_position
        self.late_start = (
            "beginning"  # without a group a position is a cursor: a new server's whole log
            if start == "beginning" or options.group is None
            else dt.datetime.now(dt.UTC).isoformat()
        )
        self.readers = {
            name: self._reader(dsn, options.starting_position)
            for name, dsn in placed_servers(self.home, options.topics or ()).items()
        }

    def _reader(self, dsn: str, start: str | None) -> PgmbusStreamReader:
        options = replace(self.options, dsn=dsn, placement_home=None, starting_position=start)
        return PgmbusStreamReader(options, self.payload_type)

    def _refresh(self) -> None:
        """Add the servers that became readable since (a change of a topic's servers)."""
        try:
            found = placed_servers(self.home, self.options.topics or ())
        except ConfigurationError as exc:  # the home is away: go on with the servers known
            log.warning("placement map not read again (%s): keeping the last one", exc)
            return
        for name, dsn in found.items():
            if name not in self.readers:
                log.info("placement: server %s joins the read", name)
                self.readers[name] = self._reader(dsn, self.late_start)

    def _starts(self, offset: dict[str, Any]) -> dict[str, Any]:
        """Each server's part of ``offset``; its initial offset for a server new to it."""
        given = offset.get("servers", {})
        return {
            name: given[name] if name in given else reader.initialOffset()
            for name, reader in self.readers.items()
        }

    def initialOffset(self) -> dict[str, Any]:
        return {"servers": {name: r.initialOffset() for name, r in self.readers.items()}}

    def getDefaultReadLimit(self) -> ReadLimit:
        return next(iter(self.readers.values())).getDefaultReadLimit()

    def prepareForTriggerAvailableNow(self) -> None:
        for reader in self.readers.values():
            reader.prepareForTriggerAvailableNow()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        self._refresh()
        starts = self._starts(start)
        return {
            "servers": {
                name: reader.latestOffset(starts[name], limit)
                for name, reader in self.readers.items()
            }
        }

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[RangePartition]:
        starts, ends = self._starts(start), end["servers"]
        return [
            replace(part, dsn=self.readers[name].options.dsn)
            for name in ends
            if name in self.readers
            for part in self.readers[name].partitions(starts[name], ends[name])
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options.dsn, partition, self.payload_type)

    def commit(self, end: dict[str, Any]) -> None:
        ends = end.get("servers", {})
        for name, reader in self.readers.items():
            if name in ends:
                reader.commit(ends[name])
