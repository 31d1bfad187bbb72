"""Which database errors a long-running loop outlives, and how long it waits before retrying.

Workers call the database in a loop; a server restart, a cut connection, a terminated backend,
a statement or lock timeout or a serialization failure must cost them a retry, not their life.
"""

from __future__ import annotations

import random

import psycopg

# SQLSTATE classes and codes that a retry (on a new connection if need be) can get past.
_TRANSIENT_CLASSES = ("08", "40", "53", "57P")
# 25006 (read-only transaction): a connection that outlived a failover on a node now a standby;
# a new connection through a read-write multi-host DSN reaches the new primary.
_TRANSIENT_CODES = frozenset({"57014", "55P03", "55006", "25006"})


def is_transient(exc: BaseException) -> bool:
    """Tell whether ``exc`` (or an error it was raised from) is worth a retry.

    True for a broken or refused connection (``psycopg.OperationalError``, pool timeouts
    included), a server shutting down or restarting, a terminated backend, a cancelled
    statement (statement timeout), a lock not available, serialization failures and deadlocks,
    a server out of connections, and a write refused by a read-only node (a failover demoted
    it). A typed pgmbus error keeps the psycopg error it was translated from as its cause, which
    is looked at too.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, psycopg.OperationalError):
            return True
        sqlstate = getattr(current, "sqlstate", None) or getattr(current, "sqlstate_raised", None)
        if isinstance(sqlstate, str) and (
            sqlstate.startswith(_TRANSIENT_CLASSES) or sqlstate in _TRANSIENT_CODES
        ):
            return True
        current = current.__cause__
    return False


class Backoff:
    """Exponential backoff with full jitter, capped; :meth:`reset` after a success.

    Parameters
    ----------
    base:
        The first delay's upper bound, in seconds.
    cap:
        The largest delay, in seconds.
    """

    def __init__(self, base: float = 0.1, cap: float = 5.0) -> None:
        self.base = base
        self.cap = cap
        self.failures = 0
        self._rng = random.Random()  # noqa: S311 - jitter, not secrets

    def next(self) -> float:
        """The delay before the next try (and count a failure)."""
        self.failures += 1
        ceiling = min(self.cap, self.base * 2 ** min(self.failures - 1, 30))
        return self._rng.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        """Forget the failures (call after a success)."""
        self.failures = 0
