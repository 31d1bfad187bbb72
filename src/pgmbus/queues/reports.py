"""What a queue worker tells the database about the messages in hand, batched per loop turn."""

from __future__ import annotations

import collections
import logging
from dataclasses import dataclass, field
from typing import Any

from pgmbus.errors import StaleLease
from pgmbus.queues._bus_async import AsyncBus
from pgmbus.queues.model import Message
from pgmbus.reconnect import is_transient

ERRORS_KEPT = 100


@dataclass
class HandlerStats:
    """What one handler did.

    ``lost`` counts messages whose lease had ended when the worker reported on them (another
    delivery owns them); ``unreported`` those whose ack, nack or bury did not reach the
    database (down, connection lost): handled, but the database still counts the delivery as
    an attempt, and a message that reaches ``max_attempts`` that way is buried with
    ``unreported`` set and a reason saying so, not as a handler failure. ``failed`` counts
    handler failures (timeouts included); ``errors`` keeps only the last ``ERRORS_KEPT`` of
    their reasons, so a long-running worker's memory stays flat.
    """

    done: int = 0
    retried: int = 0
    dead: int = 0
    lost: int = 0
    timed_out: int = 0
    given_back: int = 0
    reconnects: int = 0
    unreported: int = 0
    failed: int = 0
    errors: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=ERRORS_KEPT)
    )

    @property
    def unfinished(self) -> int:
        """``unreported`` by its older name."""
        return self.unreported

    def summary(self) -> str:
        """``N done, R retried, D dead, L lost, T timed out, G given back, U unreported``."""
        return (
            f"{self.done} done, {self.retried} retried, {self.dead} dead, {self.lost} lost, "
            f"{self.timed_out} timed out, {self.given_back} given back, "
            f"{self.unreported} unreported"
        )


class Meter:
    """What a loop tells about each handler call besides its stats; this one forgets them.

    The worker's ``/metrics`` gives each loop one that counts (``pgmbus.workers.metrics``).
    Every :meth:`started` is followed by exactly one :meth:`ended`.
    """

    def started(self) -> None:
        """A handler call began."""

    def ended(self, seconds: float | None, failed: bool) -> None:
        """The call ended after ``seconds``; None when it was cut short at shutdown (given
        back: neither a success nor a failure)."""

    def retried(self) -> None:
        """A failed message was handed back for another attempt."""

    def buried(self) -> None:
        """A failed message went to the dead letters."""

    def killed(self) -> None:
        """A handler's child process was killed past its time limit (``pool="process"``)."""


class Reporter:
    """Acks and lease extensions in one statement each per loop turn; nacks and buries (rare:
    a failure) one by one.

    An ack waits in :attr:`pending` only until the loop's next turn (:meth:`flush`): the
    handler has returned, so a crash before the flush delivers the message again when its
    lease ends, which at-least-once allows; it is never acked before its handler returned.
    """

    def __init__(
        self,
        bus: AsyncBus,
        stats: HandlerStats,
        log: logging.Logger,
        name: str,
        meter: Meter | None = None,
    ) -> None:
        self.bus = bus
        self.stats = stats
        self.meter = meter or Meter()
        self.log = log
        self.name = name
        self.pending: list[Message] = []

    def fields(self, message: Message) -> dict[str, Any]:
        return {
            "handler": self.name,
            "queue": message.queue,
            "consumer": message.consumer,
            "iid": message.iid,
            "attempt": message.attempts,
        }

    async def flush(self) -> None:
        """Ack every message whose handler returned since the last flush, in one statement."""
        if not self.pending:
            return
        batch, self.pending = self.pending, []
        try:
            lost = await self.bus.ack_many(batch)
        except Exception as exc:
            if not is_transient(exc):
                raise
            for message in batch:
                self._unreported(message, "ack", exc)
            return
        self.stats.done += len(batch) - len(lost)
        for message in lost:
            self._lost(message, "ack")

    async def extend(self, messages: list[Message], lease: float) -> list[Message]:
        """Extend the leases of ``messages``; returns those no longer held (not kept any more).
        A database that cannot be reached is logged: the next turn tries again."""
        if not messages:
            return []
        try:
            return await self.bus.extend_many(messages, lease)
        except Exception as exc:
            if not is_transient(exc):
                self.log.exception("extending the leases of %s messages failed", len(messages))
                return list(messages)
            self.log.warning("extending the leases failed, retrying: %s", exc)
            return []

    async def finish(
        self, message: Message, how: str, *, delay: float = 0.0, reason: str = ""
    ) -> None:
        """``retry`` or ``give back`` (nack after ``delay``), or ``bury`` with ``reason``."""
        try:
            if how == "bury":
                await self.bus.bury(message, reason)
                self.stats.dead += 1
                self.meter.buried()
            else:
                await self.bus.nack(message, delay=delay)
                if how == "retry":
                    self.stats.retried += 1
                    self.meter.retried()
                else:
                    self.stats.given_back += 1
        except StaleLease:
            self._lost(message, how)
        except Exception as exc:
            if not is_transient(exc):
                raise
            self._unreported(message, how, exc)

    def _lost(self, message: Message, how: str) -> None:
        self.stats.lost += 1
        self.log.warning(
            "message %s: lease lost before %s", message.iid, how, extra=self.fields(message)
        )

    def _unreported(self, message: Message, how: str, exc: Exception) -> None:
        self.stats.unreported += 1
        self.log.warning(
            "message %s: %s did not reach the database (%s); it comes back when its lease ends",
            message.iid,
            how,
            exc,
            extra=self.fields(message),
        )
