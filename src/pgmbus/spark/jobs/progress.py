"""Watch a streaming query until it ends, reporting each micro-batch as it completes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class QueryReport:
    """What a finished query did: its micro-batches and the rows they read."""

    query_id: str
    batches: int = 0
    rows: int = 0
    seconds: float = 0.0
    per_batch: list[int] = field(default_factory=list)


def watch(
    query: Any,
    on_batch: Callable[[dict[str, Any]], None] | None = None,
    *,
    poll_seconds: float = 0.5,
    timeout: float | None = None,
) -> QueryReport:
    """Poll ``query`` until it terminates (re-raising its error), calling ``on_batch`` per batch."""
    started = time.monotonic()
    report = QueryReport(str(query.id))
    seen: set[int] = set()

    def drain() -> None:
        for progress in query.recentProgress:
            batch = int(progress["batchId"])
            if batch in seen:
                continue
            seen.add(batch)
            rows = int(progress.get("numInputRows") or 0)
            if rows:
                report.batches += 1
                report.rows += rows
                report.per_batch.append(rows)
            if on_batch is not None:
                on_batch(progress)

    while query.isActive:
        query.awaitTermination(poll_seconds)
        drain()
        if timeout is not None and time.monotonic() - started > timeout:
            query.stop()
            break
    query.awaitTermination()
    drain()
    report.seconds = time.monotonic() - started
    return report
