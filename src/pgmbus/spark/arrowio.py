"""Move rows between PostgreSQL ``COPY`` (CSV) and Arrow record batches, in C++ where possible.

CSV is the fastest format both sides parse natively: the server writes it, pyarrow's
multi-threaded reader parses it, and pyarrow's writer produces what ``COPY FROM`` reads. In
PostgreSQL's CSV an unquoted empty field is NULL and ``""`` is the empty string; pyarrow
follows the same rule on both paths with the options below.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson

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
    "id bigint, topic string, key string, payload string, headers string, "
    "published_at timestamp"
)

_BLOCK = 1 << 22  # 4 MiB of CSV per parsed block


class _CopyReader(io.RawIOBase):
    """A read-only file over the chunks of a ``COPY ... TO STDOUT``."""

    def __init__(self, copy: psycopg.Copy) -> None:
        self._copy = copy
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def peek(self) -> bool:
        """Whether any data is left (reads ahead one chunk)."""
        if not self._pending:
            chunk = self._copy.read()
            self._pending = memoryview(chunk) if chunk else memoryview(b"")
        return bool(self._pending)

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            chunk = self._copy.read()
            if not chunk:
                return 0
            self._pending = memoryview(chunk)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


def _csv_reader(stream: io.RawIOBase) -> pacsv.CSVStreamingReader:
    # The epoch-microsecond column arrives as int64 and is cast to a timestamp afterwards:
    # exact, and independent of the server's DateStyle and TimeZone.
    types = {
        "id": pa.int64(),
        "topic": pa.string(),
        "key": pa.string(),
        "payload": pa.string(),
        "headers": pa.string(),
        "published_us": pa.int64(),
    }
    return pacsv.open_csv(
        io.BufferedReader(stream, buffer_size=1 << 20),
        read_options=pacsv.ReadOptions(column_names=list(types), block_size=_BLOCK),
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types=types,
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )


def copy_events(
    conn: psycopg.Connection[Any],
    statement: Any,
    params: Sequence[Any] | dict[str, Any],
    payload_type: pa.StructType | None = None,
) -> Iterator[pa.RecordBatch]:
    """Run a ``COPY (SELECT id, topic, key, payload, headers, published_us) TO STDOUT (FORMAT
    csv)`` statement and yield :data:`EVENT_SCHEMA` record batches as they are parsed (with
    ``payload_type``, the payload column is parsed into that struct)."""
    with conn.cursor() as cur, cur.copy(statement, params) as copy:
        stream = _CopyReader(copy)
        if not stream.peek():
            return  # no rows: pyarrow refuses an empty CSV file
        for batch in _csv_reader(stream):
            yield to_event_batch(batch, payload_type)


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
    """Turn a parsed CSV batch (``published_us`` as int64) into an :data:`EVENT_SCHEMA` batch."""
    published = pc.cast(batch.column("published_us"), pa.timestamp("us", tz="UTC"))
    columns = [batch.column(i) for i in range(5)] + [published]
    if payload_type is not None:
        columns[3] = parse_payloads(columns[3], payload_type)
    return pa.RecordBatch.from_arrays(columns, schema=event_schema(payload_type))


def csv_bytes(table: pa.Table | pa.RecordBatch) -> bytes:
    """Encode rows as PostgreSQL-compatible CSV (no header; NULL as an empty field)."""
    sink = io.BytesIO()
    pacsv.write_csv(
        table, sink, pacsv.WriteOptions(include_header=False, quoting_style="needed")
    )
    return sink.getvalue()
