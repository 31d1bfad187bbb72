"""The ``pgmbus`` PySpark data source: ``read``, ``readStream``, ``write``, ``writeStream``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from pgmbus.spark.arrowio import EVENT_DDL
from pgmbus.spark.options import parse_read, parse_write

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class PgmbusDataSource(DataSource):
    """Events of the pgmbus log as a Spark source, and stream topics or queues as a sink.

    Columns: ``id`` (bigint), ``topic``, ``key``, ``payload`` (JSON text), ``headers`` (JSON
    text), ``published_at`` (timestamp, UTC). Options are described in ``docs/spark.md``.
    """

    @classmethod
    def name(cls) -> str:
        return "pgmbus"

    def schema(self) -> str:
        return EVENT_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        from pgmbus.spark.reader import PgmbusBatchReader

        return PgmbusBatchReader(parse_read(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from pgmbus.spark.reader import PgmbusStreamReader

        return PgmbusStreamReader(parse_read(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from pgmbus.spark.writer import PgmbusWriter, check_schema

        options = parse_write(self.options)
        check_schema(schema, options)
        return PgmbusWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from pgmbus.spark.writer import PgmbusStreamWriter, check_schema

        options = parse_write(self.options)
        check_schema(schema, options)
        return PgmbusStreamWriter(options)


def register(spark: SparkSession) -> None:
    """Make ``format("pgmbus")`` available in a session."""
    spark.dataSource.register(PgmbusDataSource)
