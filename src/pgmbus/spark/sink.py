"""Exactly-once table sink: each micro-batch's result lands in a PostgreSQL table once.

``TableSink`` is a ``foreachBatch`` function. For each micro-batch it opens one transaction that
claims ``(sink, query id, batch id)`` in ``mbus.spark_batches`` and writes the batch's rows
(``COPY``, or an upsert on key columns); a batch that Spark re-runs after a crash finds its
claim and writes nothing. The results in the table are therefore exactly once per batch, the
Wiki PubSub guarantee (results and progress in one transaction), on Spark.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from pgmbus.errors import ConfigurationError, translating
from pgmbus.spark.arrowio import csv_bytes
from pgmbus.sqlfiles import load_queries

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def _table_ident(table: str) -> sql.Identifier:
    parts = table.split(".")
    if not 1 <= len(parts) <= 2 or not all(parts):
        raise ConfigurationError(f"invalid table name {table!r} (use table or schema.table)")
    return sql.Identifier(*parts)


def query_id_of(df: DataFrame) -> str | None:
    """The id of the streaming query running ``df``'s micro-batch (stable across restarts)."""
    try:
        value = df.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId")
    except Exception:  # Spark Connect has no SparkContext
        return None
    return str(value) if value else None


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
        The name under which batches are recorded; default ``table:<table>``. Two queries may
        write the same table: the ledger is keyed by (sink, query id, batch id).

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
        self.dsn = dsn
        self.table = table
        self.ident = _table_ident(table)
        self.key_columns = list(key_columns or [])
        self.sink = sink or f"table:{table}"

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        query_id = query_id_of(df)
        if query_id is None:
            raise ConfigurationError("TableSink needs the streaming query id (run it in a query)")
        self.write(df.toArrow(), query_id, batch_id)

    def write(self, rows: Any, query_id: str, batch_id: int) -> bool:
        """Write an Arrow table as batch ``batch_id`` of ``query_id``; ``False`` if done before."""
        queries = load_queries("spark.sql")
        columns = [sql.Identifier(c) for c in rows.column_names]
        missing = [k for k in self.key_columns if k not in rows.column_names]
        if missing:
            raise ConfigurationError(f"key columns {missing} are not in the batch's columns")
        with psycopg.connect(self.dsn) as conn, translating():
            claimed = conn.execute(
                queries["claim_batch"],
                {
                    "sink": self.sink,
                    "query_id": query_id,
                    "batch_id": batch_id,
                    "row_count": rows.num_rows,
                },
            ).fetchone()
            if not claimed or not claimed[0]:
                conn.rollback()
                return False
            if rows.num_rows:
                self._load(conn, rows, columns, queries)
            conn.commit()
        return True

    def _load(
        self,
        conn: psycopg.Connection[Any],
        rows: Any,
        columns: list[sql.Identifier],
        queries: dict[str, Any],
    ) -> None:
        column_list = sql.SQL(", ").join(columns)
        data = csv_bytes(rows)
        if not self.key_columns:
            copy_sql = sql.SQL(queries["sink_copy"]).format(table=self.ident, columns=column_list)
            with conn.cursor() as cur, cur.copy(copy_sql) as copy:
                copy.write(data)
            return
        stage = sql.Identifier("pgmbus_sink_stage")
        conn.execute(
            sql.SQL(queries["sink_stage_create"]).format(
                stage=stage, table=self.ident, columns=column_list
            )
        )
        with conn.cursor() as cur, cur.copy(
            sql.SQL(queries["sink_copy"]).format(table=stage, columns=column_list)
        ) as copy:
            copy.write(data)
        others = [c for c in rows.column_names if c not in self.key_columns]
        updates = sql.SQL(", ").join(
            sql.SQL("{} = excluded.{}").format(sql.Identifier(c), sql.Identifier(c))
            for c in others
        )
        template = queries["sink_upsert"] if others else queries["sink_insert_ignore"]
        conn.execute(
            sql.SQL(template).format(
                table=self.ident,
                stage=stage,
                columns=column_list,
                keys=sql.SQL(", ").join(sql.Identifier(k) for k in self.key_columns),
                updates=updates,
            )
        )
