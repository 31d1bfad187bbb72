"""Worker logging: text lines or one JSON object a line, with the handler's context fields."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

#: The context a worker attaches to its records (``extra=``), copied into JSON lines.
FIELDS = ("handler", "queue", "consumer", "iid", "attempt", "group", "event")


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the context fields, and the
    traceback (``exc``) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            if name in record.__dict__:
                entry[name] = record.__dict__[name]
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure(style: str = "text", level: int = logging.INFO) -> None:
    """Send the worker's logs to stderr as ``text`` or ``json`` lines (tracebacks included)."""
    if style not in ("text", "json"):
        raise ValueError(f"log format must be 'text' or 'json', not {style!r}")
    handler = logging.StreamHandler()
    if style == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
