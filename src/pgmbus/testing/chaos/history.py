"""A history of operations, as Jepsen records them: invoke, then ok, fail or info (unknown).

Each operation of a workload is recorded twice: an ``invoke`` before it is sent, and its
completion: ``ok`` (it happened), ``fail`` (it certainly did not happen) or ``info`` (the
outcome is unknown: the connection broke before the reply). Values name messages, as
``<key>/<seq>`` (a producer's name and its counter) so that a checker can test per-key order.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

OpType = Literal["invoke", "ok", "fail", "info"]


@dataclass(frozen=True)
class Op:
    """One event of the history."""

    workload: str
    process: str
    type: OpType
    f: str
    value: str
    time: float
    error: str | None = None


class Unknown(Exception):
    """Raised inside :meth:`History.op` to record an operation whose outcome is unknown."""


class History:
    """A thread-safe, append-only list of :class:`Op`.

    Parameters
    ----------
    path:
        When given, every op is also appended to this file as one JSON line (for a post-mortem).
    """

    def __init__(self, path: Path | None = None) -> None:
        self._ops: list[Op] = []
        self._lock = threading.Lock()
        self._path = path
        self._start = time.monotonic()

    def record(
        self,
        workload: str,
        process: str,
        type_: OpType,
        f: str,
        value: str,
        error: str | None = None,
    ) -> Op:
        """Append one event; returns it."""
        op = Op(workload, process, type_, f, value, time.monotonic() - self._start, error)
        with self._lock:
            self._ops.append(op)
            if self._path is not None:
                with self._path.open("a") as handle:
                    handle.write(json.dumps(asdict(op)) + "\n")
        return op

    @contextmanager
    def op(self, workload: str, process: str, f: str, value: str) -> Iterator[None]:
        """Record an invoke, run the block, and record its completion.

        The block's normal end is ``ok``; :class:`Unknown` raised in it is ``info`` (and is
        swallowed); any other exception is ``fail`` and propagates. The caller decides what is
        unknown: a broken connection during a write is, a refused connection is not.
        """
        self.record(workload, process, "invoke", f, value)
        try:
            yield
        except Unknown as exc:
            self.record(workload, process, "info", f, value, str(exc.__cause__ or exc))
            return
        except BaseException as exc:
            self.record(workload, process, "fail", f, value, f"{type(exc).__name__}: {exc}")
            raise
        self.record(workload, process, "ok", f, value)

    def ops(self, workload: str | None = None) -> list[Op]:
        """A copy of the events (of one workload, when given), in the order recorded."""
        with self._lock:
            return [o for o in self._ops if workload is None or o.workload == workload]

    def __len__(self) -> int:
        with self._lock:
            return len(self._ops)
