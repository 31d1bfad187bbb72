"""Sagas: forward and compensation message sequences over mbus queues (original mbus API).

A :class:`Saga` names its steps; :meth:`Saga.start` posts the whole pattern (``mbus.saga_start``)
in the caller's transaction. Handlers run in transactions (:func:`run_saga_worker`): a forward
handler that cannot do its step raises, and the worker starts the rollback atomically
(``mbus.saga_rollback``); :func:`run_saga_pump` completes sagas and records finished rollbacks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pgmbus.data.queues import QUEUES as Q
from pgmbus.data.rows import rows as _rows
from pgmbus.data.rows import value as _value
from pgmbus.errors import LockNotAvailable
from pgmbus.queues.model import Message

SagaHandler = Callable[[psycopg.Connection[Any], Message], None]


@dataclass(frozen=True)
class Step:
    """One forward step: a message to ``queue`` after the steps named in ``after``; its
    compensation (if any) is a message to ``compensate``. Both carry ``data``."""

    name: str
    queue: str
    after: tuple[str, ...] = ()
    compensate: str | None = None
    data: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class SagaRef:
    """Where a message belongs: its saga, its step, and whether it is a compensation."""

    saga_id: int
    step: str
    compensation: bool


@dataclass(frozen=True)
class SagaStatus:
    """A row of ``mbus.sagas``: state is running, completed, compensating or compensated;
    steps maps each step to its forward and compensation states."""

    saga_id: int
    name: str
    state: str
    reason: str | None
    steps: dict[str, dict[str, str | None]]


class SagaFailed(Exception):
    """Raised by a forward handler that cannot do its step: the saga is rolled back."""


class Saga:
    """A saga definition: a name and steps in an order where each comes after those it names.

    Parameters
    ----------
    name:
        Label of the sagas started from it (``mbus.sagas.name``).
    steps:
        The forward steps; parallel branches are steps with the same ``after``.
    """

    def __init__(self, name: str, steps: Sequence[Step]) -> None:
        self.name = name
        self.steps = list(steps)

    def start(self, conn: psycopg.Connection[Any], data: Mapping[str, Any] | None = None) -> int:
        """Post the saga's messages in ``conn``'s transaction; returns the saga id.

        ``data`` is merged into every step's data; the messages exist when that transaction
        commits.
        """
        steps = [
            {
                "step": s.name,
                "queue": s.queue,
                "after": list(s.after),
                "compensate": s.compensate,
                "data": dict(data or {}) | dict(s.data or {}),
            }
            for s in self.steps
        ]
        params = {"name": self.name, "steps": Jsonb(steps), "data": Jsonb(dict(data or {}))}
        return int(_value(conn, Q["saga_start"], params))


def saga_of(message: Message) -> SagaRef | None:
    """The saga a message belongs to (from ``headers.saga``), or None."""
    ref = message.headers.get("saga")
    if not isinstance(ref, dict):
        return None
    return SagaRef(int(ref["id"]), str(ref["step"]), bool(ref.get("compensation")))


def step_done(conn: psycopg.Connection[Any], message: Message) -> None:
    """Record in ``conn``'s transaction that the message's step (or compensation) was done."""
    ref = saga_of(message)
    if ref is None:
        raise ValueError(f"message {message.iid} belongs to no saga")
    params = {"saga_id": ref.saga_id, "step": ref.step, "compensation": ref.compensation}
    _rows(conn, Q["saga_step_done"], params)


def rollback(conn: psycopg.Connection[Any], saga_id: int, reason: str) -> bool:
    """Start the saga's rollback in ``conn``'s transaction; False when there was nothing to
    take (completed, or rolled back by another handler). Raises ``LockNotAvailable`` while
    another transaction is rolling it back: roll back and retry."""
    return bool(_value(conn, Q["saga_rollback"], {"saga_id": saga_id, "reason": reason}))


def pump(conn: psycopg.Connection[Any], amount: int = 100) -> int:
    """Handle final and done messages (complete sagas, record rollbacks); returns how many."""
    return int(_value(conn, Q["saga_pump"], {"amount": amount}))


def status(conn: psycopg.Connection[Any], saga_id: int) -> SagaStatus:
    """The saga's state and its steps' states."""
    rows = _rows(conn, Q["saga_status"], {"saga_id": saga_id})
    if not rows:
        raise LookupError(f"saga {saga_id} does not exist")
    return SagaStatus(**rows[0])


def _handle_one(conn: psycopg.Connection[Any], queue: str, handler: SagaHandler) -> bool:
    """Consume one message of ``queue`` and handle it in one transaction; True if there was one."""
    failure: str | None = None
    with conn.transaction():
        rows = _rows(conn, Q["consume_one"], {"queue": queue, "consumer": "default"})
        if not rows:
            return False
        message = Message.from_row(queue, "default", rows[0])
        ref = saga_of(message)
        try:
            with conn.transaction():  # a savepoint: the handler's work goes if it fails
                handler(conn, message)
                if ref is not None:
                    step_done(conn, message)
        except Exception as exc:
            if ref is None or ref.compensation:
                raise
            failure = f"{ref.step}: {type(exc).__name__}: {exc}"
        if failure is not None and ref is not None:
            rollback(conn, ref.saga_id, failure)
    return True


def run_saga_worker(
    dsn: str,
    queue: str,
    handler: SagaHandler,
    stop: threading.Event,
    *,
    poll_interval: float = 0.05,
) -> None:
    """Handle messages of ``queue`` one transaction each until ``stop`` is set.

    The handler gets the connection (do the step's database work on it) and the message. When
    it returns, the step is recorded done and the transaction commits with the consume. When a
    forward handler raises, its work is undone and the saga is rolled back in the same
    transaction as the consume. A compensation handler that raises is retried later.
    """
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not stop.is_set():
            try:
                busy = _handle_one(conn, queue, handler)
            except LockNotAvailable:
                busy = False  # another handler is rolling the saga back; retry afterwards
            except Exception:
                busy = False
            if not busy:
                stop.wait(poll_interval)


def run_saga_pump(dsn: str, stop: threading.Event, *, poll_interval: float = 0.05) -> None:
    """Call :func:`pump` until ``stop`` is set."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not stop.is_set():
            if pump(conn) == 0:
                stop.wait(poll_interval)
            else:
                time.sleep(0)
