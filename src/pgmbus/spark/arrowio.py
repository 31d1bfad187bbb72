"""Move rows between PostgreSQL and Arrow record batches, in C++ where possible.

Reads go through ADBC (``COPY ... (FORMAT binary)`` decoded into Arrow by the driver); writes
encode Arrow as CSV for ``COPY FROM`` (pyarrow's writer; in PostgreSQL's CSV an unquoted empty
field is NULL and ``""`` is the empty string, which pyarrow follows with the options below).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from pgmbus.spark import connections

#: Arrow schema of an event row as the source yields it (must match the Spark schema exactly).
EVENT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("topic", pa.string()),
        pa.field("key", pa.string()),
        pa.field("payload", pa.string()),
        pa.field("headers", pa.string()),
        pa.field("published_at", pa.timestamp("us", tz="UTC")),
    ]
)

#: The Spark DDL of :data:`EVENT_SCHEMA`.
EVENT_DDL = (
    "id bigint, topic string, key string, payload string, headers string, published_at timestamp"
)

#: ADBC's batch size hint: big enough to amortise per-batch costs, small enough that the JVM
#: converts one batch while the worker decodes the next.
_BATCH_OPTION = "adbc.postgresql.batch_size_hint_bytes"
_BATCH_BYTES = 1 << 22


def read_events(
    dsn: str, query: str, payload_type: pa.StructType | None = None
) -> Iterator[pa.RecordBatch]:
    """Run ``query`` (a complete statement, no parameters, selecting the columns of
    :data:`EVENT_SCHEMA`) through ADBC and yield :data:`EVENT_SCHEMA` record batches as they
    arrive (with ``payload_type``, the payload column is parsed into that struct).

    ADBC runs the query as ``COPY ... (FORMAT binary)`` and decodes it into Arrow in C++: no
    Python code runs per row. Without parameters, so that the planner sees the cursors as
    constants (see ``mbus.spark_read``). The connection is kept for the process's next read
    (:mod:`pgmbus.spark.connections`)."""
    conn, kept = connections.take(dsn)
    done = False
    try:
        try:
            cur, reader = _execute(conn, query)
        except Exception as exc:
            if not (kept and connections.is_connection_error(exc)):
                raise
            # a kept connection may have gone stale (server restart, idle timeout): once more
            connections.discard(conn)
            conn = connections.open_connection(dsn)
            cur, reader = _execute(conn, query)
        with cur:
            for batch in reader:
                yield to_event_batch(batch, payload_type)
        done = True
    finally:
        if done:
            connections.give_back(dsn, conn)
        else:
            connections.discard(conn)


def _execute(conn: Any, query: str) -> tuple[Any, Any]:
    cur = conn.cursor()
    try:
        cur.adbc_statement.set_options(**{_BATCH_OPTION: str(_BATCH_BYTES)})
        cur.execute(query)
        return cur, cur.fetch_record_batch()
    except BaseException:
        cur.close()
        raise


def parse_payloads(strings: pa.Array, payload_type: pa.StructType) -> pa.StructArray:
    """Parse JSON object texts (one per row, as jsonb prints them: one line each) into a struct
    array of ``payload_type``; keys not in the type are ignored, missing ones are null."""
    if len(strings) == 0:
        return pa.array([], type=payload_type)
    text = "\n".join(strings.to_pylist()).encode()
    fields = [payload_type.field(i) for i in range(payload_type.num_fields)]
    table = pajson.read_json(
        io.BytesIO(text),
        read_options=pajson.ReadOptions(use_threads=False, block_size=max(len(text), 1 << 20)),
        parse_options=pajson.ParseOptions(
            explicit_schema=pa.schema(fields), unexpected_field_behavior="ignore"
        ),
    )
    return pa.StructArray.from_arrays(
        [table.column(f.name).combine_chunks() for f in fields], fields=fields
    )


def event_schema(payload_type: pa.StructType | None = None) -> pa.Schema:
    """:data:`EVENT_SCHEMA`, with the payload as ``payload_type`` when given."""
    if payload_type is None:
        return EVENT_SCHEMA
    return EVENT_SCHEMA.set(3, pa.field("payload", payload_type))


def to_event_batch(
    batch: pa.RecordBatch, payload_type: pa.StructType | None = None
) -> pa.RecordBatch:
    """Give a batch of the read query :data:`EVENT_SCHEMA` exactly (ADBC adds field metadata),
    parsing the payload into ``payload_type`` when given."""
    columns = list(batch.columns)
    if payload_type is not None:
        columns[3] = parse_payloads(columns[3], payload_type)
    return pa.RecordBatch.from_arrays(columns, schema=event_schema(payload_type))


def csv_bytes(table: pa.Table | pa.RecordBatch) -> bytes:
    """Encode rows as PostgreSQL-compatible CSV (no header; NULL as an empty field)."""
    sink = io.BytesIO()
    pacsv.write_csv(table, sink, pacsv.WriteOptions(include_header=False, quoting_style="needed"))
    return sink.getvalue()
