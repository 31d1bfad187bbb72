"""Before a worker starts: every queue, consumer and stream group it reads exists
(``pgmbus.workers.checks``), checked on a connection the CLI opens."""

from __future__ import annotations

from collections.abc import Iterable

from pgmbus.cli.common import connect
from pgmbus.workers import missing_objects, require_objects


def require_worker_objects(
    dsn: str, consumers: Iterable[tuple[str, str]], groups: Iterable[str] = ()
) -> None:
    """Raise ``NotFound`` (MB002) naming every missing object and its fix, in one message."""
    with connect(dsn) as conn:
        require_objects(conn, consumers, groups)


__all__ = ["missing_objects", "require_worker_objects"]
