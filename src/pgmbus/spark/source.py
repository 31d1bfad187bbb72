"""The ``pgmbus`` PySpark data source: ``read``, ``readStream``, ``write``, ``writeStream``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from pgmbus.spark.arrowio import EVENT_DDL
from pgmbus.spark.options import ReadOptions, parse_read, parse_write

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class PgmbusDataSource(DataSource):
    """Events of the pgmbus log as a Spark source, and stream topics or queues as a sink.

    Columns: ``id`` (bigint), ``topic``, ``key``, ``payload`` (JSON text, or a struct with the
    ``payloadSchema`` option), ``headers`` (JSON text), ``published_at`` (timestamp, UTC).
    Options are described in ``docs/spark.md``.
    """

    @classmethod
    def name(cls) -> str:
        return "pgmbus"

    def schema(self) -> str:
        payload = {str(k).lower(): v for k, v in self.options.items()}.get("payloadschema")
        if payload:
            return EVENT_DDL.replace("payload string", f"payload struct<{payload}>")
        return EVENT_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        from pgmbus.spark.reader import PgmbusBatchReader

        options = parse_read(self.options, streaming=False)
        return PgmbusBatchReader(options, payload_arrow_type(schema, options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from pgmbus.spark.placed_stream import PlacedStreamReader
        from pgmbus.spark.reader import PgmbusStreamReader

        options = parse_read(self.options, streaming=True)
        if options.placement_home is not None:
            return PlacedStreamReader(options, payload_arrow_type(schema, options))
        return PgmbusStreamReader(options, payload_arrow_type(schema, options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        import uuid

        from pgmbus.spark.placed import PlacedWriter, routes_of
        from pgmbus.spark.writer import PgmbusWriter, check_schema

        options = parse_write(self.options)
        check_schema(schema, options)
        if options.placement_home is None:
            return PgmbusWriter(options)
        options, routes = routes_of(options.placement_home, options)
        if not routes:  # a placed queue: written on its server like any write
            return PgmbusWriter(options)
        home = options.placement_home or options.dsn
        return PlacedWriter(options, home, routes, f"write-{uuid.uuid4().hex}")

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from pgmbus.spark.placed import PlacedStreamWriter, routes_of
        from pgmbus.spark.writer import PgmbusStreamWriter, check_schema

        options = parse_write(self.options)
        check_schema(schema, options)
        if options.placement_home is None:
            return PgmbusStreamWriter(options)
        options, routes = routes_of(options.placement_home, options)
        if not routes:
            return PgmbusStreamWriter(options)
        return PlacedStreamWriter(options, options.placement_home or options.dsn, routes)


class PgmbusPlainDataSource(PgmbusDataSource):
    """``PgmbusDataSource`` for sessions with Python filter push-down off (no ``pushFilters``)."""

    def reader(self, schema: StructType) -> DataSourceReader:
        from pgmbus.spark.reader import PgmbusPlainBatchReader

        options = parse_read(self.options, streaming=False)
        return PgmbusPlainBatchReader(options, payload_arrow_type(schema, options))


def payload_arrow_type(schema: StructType, options: ReadOptions) -> Any:
    """The Arrow struct type of the payload when ``payloadSchema`` is given, else ``None``."""
    if options.payload_schema is None:
        return None
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(schema["payload"].dataType, timezone="UTC")


PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession, *, pushdown: bool = True) -> bool:
    """Make ``format("pgmbus")`` available in a session; returns whether filters are pushed.

    Spark's default leaves Python filter push-down off and then refuses a reader that can push
    filters (``DATA_SOURCE_PUSHDOWN_DISABLED``). With ``pushdown`` (the default) this turns the
    session option on when it is off and may be changed at runtime; otherwise, or when
    ``pushdown`` is False, it registers a reader that pushes nothing (Spark filters the rows).
    Turning the option off after ``register`` makes reads fail: call ``register`` again.
    """
    enabled = str(spark.conf.get(PUSHDOWN, "false")).lower() == "true"
    if pushdown and not enabled and spark.conf.isModifiable(PUSHDOWN):
        spark.conf.set(PUSHDOWN, "true")
        enabled = True
    pushing = pushdown and enabled
    spark.dataSource.register(PgmbusDataSource if pushing else PgmbusPlainDataSource)
    return pushing
