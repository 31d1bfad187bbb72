"""Exactly-once table sinks: each micro-batch's results land in PostgreSQL tables once.

One transaction claims ``(sink, query id, batch id)`` in ``mbus.spark_batches`` and writes the
batch's rows (``COPY``, or an upsert on key columns); a batch that Spark re-runs after a crash
finds its claim and writes nothing. Results and progress commit together, which is the Wiki
PubSub guarantee, on Spark. ``TableSink`` is the ready-made ``foreachBatch`` function;
``exactly_once`` is the building block for jobs that write several tables per batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, LiteralString

import psycopg
from psycopg import sql

from pgmbus.data.spark import SPARK
from pgmbus.errors import ConfigurationError, translating
from pgmbus.spark.arrowio import csv_bytes

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_STAGE = sql.Identifier("pg_temp", "pgmbus_sink_stage")

Combine = Literal["replace", "add", "greatest"]
# How an upsert merges a column with the stored row (templates of psycopg.sql, no user text).
_COMBINE: dict[str, LiteralString] = {
    "replace": "{c} = excluded.{c}",
    "add": "{c} = {t}.{c} + excluded.{c}",
    "greatest": "{c} = greatest({t}.{c}, excluded.{c})",
}


def table_ident(table: str) -> sql.Identifier:
    """``table`` or ``schema.table`` as a quoted identifier."""
    parts = table.split(".")
    if not 1 <= len(parts) <= 2 or not all(parts):
        raise ConfigurationError(f"invalid table name {table!r} (use table or schema.table)")
    return sql.Identifier(*parts)


def query_id_of(df: DataFrame) -> str:
    """The id of the streaming query running ``df``'s micro-batch (stable across restarts)."""
    value = None
    try:
        value = df.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId")
    except Exception:  # Spark Connect has no SparkContext
        value = None
    if not value:
        raise ConfigurationError("no streaming query id: call this from foreachBatch")
    return str(value)


class BatchWriter:
    """Writes of one claimed micro-batch, all in the claiming transaction."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def append(self, table: str, rows: Any) -> None:
        """Append an Arrow table's rows (columns by name) with ``COPY``."""
        if rows.num_rows == 0:
            return
        self._copy(table_ident(table), rows)

    def upsert(
        self,
        table: str,
        rows: Any,
        keys: Sequence[str],
        *,
        combine: Mapping[str, Combine] | None = None,
    ) -> None:
        """Insert rows; on a key conflict combine each other column with the stored value.

        ``combine`` maps a column to ``replace`` (the default: the new value wins), ``add``
        (counters; a replay would double them, which the ledger claim prevents) or ``greatest``.
        """
        missing = [k for k in keys if k not in rows.column_names]
        if missing or not keys:
            raise ConfigurationError(f"key columns {missing or '[]'} are not in the rows")
        if rows.num_rows == 0:
            return
        ident = table_ident(table)
        queries = SPARK
        columns = sql.SQL(", ").join(sql.Identifier(c) for c in rows.column_names)
        self.conn.execute(sql.SQL(queries["sink_stage_drop"]).format(stage=_STAGE))
        self.conn.execute(
            sql.SQL(queries["sink_stage_create"]).format(stage=_STAGE, table=ident, columns=columns)
        )
        self._copy(_STAGE, rows)
        others = [c for c in rows.column_names if c not in keys]
        updates = sql.SQL(", ").join(
            sql.SQL(_COMBINE[(combine or {}).get(c, "replace")]).format(
                c=sql.Identifier(c), t=ident
            )
            for c in others
        )
        statement = queries["sink_upsert"] if others else queries["sink_insert_ignore"]
        self.conn.execute(
            sql.SQL(statement).format(
                table=ident,
                stage=_STAGE,
                columns=columns,
                keys=sql.SQL(", ").join(sql.Identifier(k) for k in keys),
                updates=updates,
            )
        )

    def _copy(self, ident: sql.Identifier, rows: Any) -> None:
        columns = sql.SQL(", ").join(sql.Identifier(c) for c in rows.column_names)
        statement = sql.SQL(SPARK["sink_copy"]).format(table=ident, columns=columns)
        with self.conn.cursor() as cur, cur.copy(statement) as copy:
            copy.write(csv_bytes(rows))


@contextmanager
def exactly_once(
    dsn: str, sink: str, query_id: str, batch_id: int, row_count: int = 0
) -> Iterator[BatchWriter | None]:
    """Claim a micro-batch and yield a writer for its results, or ``None`` if it was done.

    Everything written through the writer commits with the claim when the block ends (and
    nothing does when it raises).
    """
    with psycopg.connect(dsn) as conn, translating():
        claimed = conn.execute(
            SPARK["claim_batch"],
            {"sink": sink, "query_id": query_id, "batch_id": batch_id, "row_count": row_count},
        ).fetchone()
        if not claimed or not claimed[0]:
            conn.rollback()
            yield None
            return
        yield BatchWriter(conn)
        conn.commit()


class TableSink:
    """A ``foreachBatch`` function that writes each micro-batch into a table exactly once.

    Parameters
    ----------
    dsn:
        The database holding the table (and the mbus schema, for the ledger).
    table:
        ``table`` or ``schema.table``; its columns are the DataFrame's columns, by name.
    key_columns:
        When given, rows are upserted on these columns (they need a unique index) and the other
        columns are replaced: right for aggregates in Spark's ``update`` output mode. Otherwise
        rows are appended.
    sink:
        The name under which batches are recorded; default ``table:<table>``.

    Examples
    --------
    >>> query = (events.writeStream
    ...     .foreachBatch(TableSink(dsn, "public.user_edits", key_columns=["user_name"]))
    ...     .option("checkpointLocation", "/tmp/ckpt").outputMode("update").start())
    """

    def __init__(
        self,
        dsn: str,
        table: str,
        *,
        key_columns: Sequence[str] | None = None,
        sink: str | None = None,
    ) -> None:
        table_ident(table)
        self.dsn = dsn
        self.table = table
        self.key_columns = list(key_columns or [])
        self.sink = sink or f"table:{table}"

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        self.write(df.toArrow(), query_id_of(df), batch_id)

    def write(self, rows: Any, query_id: str, batch_id: int) -> bool:
        """Write an Arrow table as batch ``batch_id`` of ``query_id``; ``False`` if done before."""
        missing = [k for k in self.key_columns if k not in rows.column_names]
        if missing:
            raise ConfigurationError(f"key columns {missing} are not in the batch's columns")
        with exactly_once(self.dsn, self.sink, query_id, batch_id, rows.num_rows) as writer:
            if writer is None:
                return False
            if self.key_columns:
                writer.upsert(self.table, rows, self.key_columns)
            else:
                writer.append(self.table, rows)
            return True
