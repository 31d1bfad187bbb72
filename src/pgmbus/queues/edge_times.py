"""Read timestamps Python cannot hold (``infinity``, past year 9999, BC) as datetime's ends.

PostgreSQL stores times from 4713 BC to year 294276 and +/-infinity; Python's ``datetime`` ends
at years 1 and 9999, and psycopg raises ``DataError`` for the rest. A claim (``consume``,
``take``, ``lease``) has committed by the time its rows are read, so such an error would drop
messages the server already handed over. The queue functions refuse these times (MB006), but
rows written by older versions or by hand may still hold one: the bus reads them as
``datetime.max`` / ``datetime.min`` (UTC) instead.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import abc
from psycopg.adapt import Buffer, Loader
from psycopg.pq import Format
from psycopg.types.datetime import TimestamptzLoader

LATEST = datetime.max.replace(tzinfo=UTC)
EARLIEST = datetime.min.replace(tzinfo=UTC)

_OID = psycopg.adapters.types["timestamptz"].oid
# the loader psycopg registered (its C one when psycopg[binary] is installed)
_STANDARD: type[abc.Loader] = psycopg.adapters.get_loader(_OID, Format.TEXT) or TimestamptzLoader


class EdgeTimestamptzLoader(Loader):
    """psycopg's own text loader, with out-of-range times mapped to :data:`LATEST` or
    :data:`EARLIEST` instead of an error."""

    def __init__(self, oid: int, context: abc.AdaptContext | None = None) -> None:
        super().__init__(oid, context)
        self._standard = _STANDARD(oid, context)

    def load(self, data: Buffer) -> Any:
        try:
            return self._standard.load(data)
        except psycopg.DataError:
            text = bytes(data)
            return EARLIEST if text.startswith(b"-") or text.endswith(b"BC") else LATEST


def register(context: abc.AdaptContext) -> None:
    """Use :class:`EdgeTimestamptzLoader` for ``timestamptz`` values read in ``context``."""
    context.adapters.register_loader(_OID, EdgeTimestamptzLoader)
