"""``spark.readStream`` through the placement map: one consumer group per server, one offset.

The servers are those the map on the home database gives the placed ``topics``, by name. Each
server is read by an ordinary :class:`~pgmbus.spark.reader.PgmbusStreamReader` (its group, its
cursors, slotted or not); the query's offset holds them all, ``{"servers": {name: offset}}``, so
Spark's checkpoint moves every server's position together and a micro-batch is the events
between the two combined offsets, each read once. ``commit`` advances every server's group.
A server placed for the topics after the query started joins at its group's position at the
next restart of the query (or at once when it was already in the map at start): the offset of
a server missing from a checkpointed offset is its group's initial offset.
"""

from __future__ import annotations

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


def placed_servers(home: str, topics: tuple[str, ...]) -> dict[str, str]:
    """Name and DSN of every server of ``topics`` in the map on ``home`` (each once)."""
    from pgmbus.scaleout.placement import Cluster

    with Cluster(home, refresh=3600.0) as cluster:
        try:
            cluster.reload()
            dsns = cluster.servers()
            names = dict.fromkeys(
                name for t in topics for name in cluster.placement("topic", t).servers
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
        home = options.placement_home or options.dsn
        self.readers = {
            name: PgmbusStreamReader(replace(options, dsn=dsn, placement_home=None), payload_type)
            for name, dsn in placed_servers(home, options.topics or ()).items()
        }

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
            replace(part, dsn=reader.options.dsn)
            for name, reader in self.readers.items()
            for part in reader.partitions(starts[name], ends[name])
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options.dsn, partition, self.payload_type)

    def commit(self, end: dict[str, Any]) -> None:
        ends = end.get("servers", {})
        for name, reader in self.readers.items():
            if name in ends:
                reader.commit(ends[name])
