"""Handler declarations: ``@bus.handler`` / ``@bus.stream_handler`` and the policies they record."""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pgmbus.renamed import renamed_keywords

if TYPE_CHECKING:
    from pgmbus.queues.model import Message

F = TypeVar("F", bound=Callable[..., Any])
ExceptionTypes = tuple[type[BaseException], ...]


class HandlerTimeout(TimeoutError):
    """A handler ran longer than its ``timeout``; the worker treats it as the attempt's error."""


class HandlerProcessDied(Exception):
    """A process-pool handler's child ended without an outcome (a crash, ``os._exit``, the
    OOM killer): the attempt failed, retried or buried as for an error."""


Pool = Literal["thread", "process"]
"""Where a plain ``def`` handler runs: a reused thread, or a killable child process."""
POOLS: tuple[Pool, ...] = ("thread", "process")


@dataclass(frozen=True)
class RetryPolicy:
    """When and how soon a failed message is delivered again.

    Attributes
    ----------
    max_attempts:
        Deliveries in all; after the last failed one the message goes to the dmq with the
        exception as its reason.
    backoff:
        Seconds before the first retry, doubling with each attempt (capped by ``backoff_max``);
        or a function of the number of failed attempts that returns the seconds.
    backoff_max:
        The longest wait between two attempts.
    jitter:
        Fraction (0 to 1) of each wait drawn at random: the wait is uniform in
        ``[delay * (1 - jitter), delay]``. 1 is "full jitter", 0 a fixed schedule.
    retry_on:
        Only these exception types are retried (default: every ``Exception``).
    no_retry_on:
        These are never retried: the message goes straight to the dmq. Checked first.
    """

    max_attempts: int = 5
    backoff: float | Callable[[int], float] = 1.0
    backoff_max: float = 300.0
    jitter: float = 0.25
    retry_on: ExceptionTypes = (Exception,)
    no_retry_on: ExceptionTypes = ()

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("jitter must be between 0 and 1")

    def retries(self, exc: BaseException) -> bool:
        """Tell whether an attempt that raised ``exc`` may be retried (attempts aside)."""
        if isinstance(exc, self.no_retry_on):
            return False
        return isinstance(exc, self.retry_on)

    def delay(self, attempts: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before the next delivery after ``attempts`` failed ones."""
        if callable(self.backoff):
            base = float(self.backoff(attempts))
        else:
            base = self.backoff * 2 ** min(max(attempts - 1, 0), 60)
        base = max(0.0, min(self.backoff_max, base))
        if self.jitter:
            draw = (rng or _RNG).random()
            base -= base * self.jitter * draw
        return base


_RNG = random.Random()  # noqa: S311 - jitter, not secrets


DEFAULT_CONCURRENCY = 10
"""Messages a queue handler handles at once unless told: enough for a fast handler's claims to
come in batches, few enough threads for a slow plain ``def`` one."""


def handler_name(fn: Callable[..., Any]) -> str:
    """``module.qualname`` of a handler function: its logger's suffix and its report key."""
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


@dataclass(frozen=True)
class QueueHandler:
    """A function that handles the messages of one queue consumer (see ``Handlers.handler``)."""

    fn: Callable[[Message], Any]
    queue: str
    consumer: str = "default"
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout: float | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    lease: float = 60.0
    poll_interval: float = 1.0
    pool: Pool = "thread"

    @property
    def name(self) -> str:
        """``module.qualname`` of the function: the name of its logger, stats and health."""
        return handler_name(self.fn)

    @property
    def is_async(self) -> bool:
        """True for an ``async def`` handler (run as a task; else in a thread)."""
        return inspect.iscoroutinefunction(self.fn)


@dataclass(frozen=True)
class StreamHandler:
    """A function that handles the events of one stream group (see ``Handlers.stream_handler``)."""

    fn: Callable[[Any, Any], Any]
    group: str
    slots: tuple[int, ...] | None = None
    max_events: int = 100
    subscriptions: bool = False
    idle_wait: float = 1.0

    @property
    def name(self) -> str:
        """``module.qualname`` of the function."""
        return handler_name(self.fn)

    @property
    def is_async(self) -> bool:
        """True for an ``async def`` handler (a task on the async client; else a thread)."""
        return inspect.iscoroutinefunction(self.fn)


class Handlers:
    """The decorators that declare handlers; ``Bus``, ``AsyncBus`` and ``App`` have them.

    Declaring only records the function (it stays callable as it was); ``pgmbus worker
    module:bus`` or :func:`pgmbus.workers.run` run every declared handler in one process.
    """

    @property
    def queue_handlers(self) -> list[QueueHandler]:
        """The queue handlers declared so far, in order."""
        found: list[QueueHandler] = self.__dict__.setdefault("_pgmbus_queue_handlers", [])
        return found

    @property
    def stream_handlers(self) -> list[StreamHandler]:
        """The stream handlers declared so far, in order."""
        found: list[StreamHandler] = self.__dict__.setdefault("_pgmbus_stream_handlers", [])
        return found

    def handler(
        self,
        queue: str,
        *,
        consumer: str = "default",
        max_attempts: int = 5,
        backoff: float | Callable[[int], float] = 1.0,
        backoff_max: float = 300.0,
        jitter: float = 0.25,
        retry_on: Iterable[type[BaseException]] = (Exception,),
        no_retry_on: Iterable[type[BaseException]] = (),
        timeout: float | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        lease: float = 60.0,
        poll_interval: float = 1.0,
        pool: Pool = "thread",
    ) -> Callable[[F], F]:
        """Declare ``fn(message)`` (sync or ``async def``) as the handler of a queue consumer.

        Parameters
        ----------
        queue, consumer:
            Where its messages come from (the queue and consumer must exist).
        max_attempts, backoff, backoff_max, jitter, retry_on, no_retry_on:
            The retry policy (:class:`RetryPolicy`). A message whose handler raised an
            exception that is not retried goes straight to the dmq, its reason
            ``"ExceptionType: message"``.
        timeout:
            Seconds an attempt may take (None: no limit). An async handler is cancelled; a sync
            one in a thread cannot be stopped: its lease is no longer extended, the message is
            retried or buried as for an error (:class:`HandlerTimeout`), the thread's result is
            ignored, and the slot waits for the thread before it claims again. In a child
            process (``pool="process"``) it is killed instead, and the slot is free at once.
        concurrency:
            Messages handled at once (tasks for async handlers, threads or child processes for
            sync ones).
        lease:
            The visibility timeout; the worker extends it every half lease while a handler runs.
        poll_interval:
            Longest wait between two looks at an idle queue (NOTIFY wakes the worker sooner);
            also the longest a stop request waits for an idle slot.
        pool:
            Where a plain ``def`` runs: ``"thread"`` (default) or ``"process"``, a pool of
            ``concurrency`` child processes that ``timeout`` can kill (docs/workers.md); the
            function must be importable by its module and name.
        """
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if pool not in POOLS:
            raise ValueError(f"pool must be one of {', '.join(POOLS)}, not {pool!r}")
        if timeout is not None and timeout <= 0:
            raise ValueError("timeout must be > 0")
        policy = RetryPolicy(
            max_attempts=max_attempts,
            backoff=backoff,
            backoff_max=backoff_max,
            jitter=jitter,
            retry_on=tuple(retry_on),
            no_retry_on=tuple(no_retry_on),
        )

        def declare(fn: F) -> F:
            if pool == "process" and inspect.iscoroutinefunction(fn):
                raise ValueError(
                    f"{handler_name(fn)} is an async def: its timeout cancels it already, "
                    "pool='process' is for plain def handlers"
                )
            self.queue_handlers.append(
                QueueHandler(
                    fn=fn,
                    queue=queue,
                    consumer=consumer,
                    retry=policy,
                    timeout=timeout,
                    concurrency=concurrency,
                    lease=lease,
                    poll_interval=poll_interval,
                    pool=pool,
                )
            )
            return fn

        return declare

    @renamed_keywords(max_events="batch")
    def stream_handler(
        self,
        group: str,
        *,
        slots: Iterable[int] | None = None,
        batch: int = 100,
        subscriptions: bool = False,
        idle_wait: float = 1.0,
    ) -> Callable[[F], F]:
        """Declare ``fn(conn, event)`` as the handler of a stream consumer group.

        A plain ``def`` runs on :class:`pgmbus.streams.StreamWorker` (a thread per slot,
        ``conn`` a ``psycopg.Connection``); an ``async def`` runs as a task of the worker's
        event loop on :class:`pgmbus.streams.AsyncStreamWorker` (``conn`` a
        ``psycopg.AsyncConnection``), the same loop written for asyncio.
        Either way it runs inside the batch's transaction on ``conn``, so its database writes
        commit with the group's cursor (exactly once); a handler that raises has its event
        retried per the group's settings, then dead-lettered.

        Parameters
        ----------
        group:
            The consumer group (it must exist).
        slots:
            For a slotted group, the slots this process consumes, one thread each (None: the
            group is not slotted).
        batch:
            Events read per batch (``max_events`` is the deprecated spelling).
        subscriptions:
            Read with ``read_subscriptions`` (events carry ``subscription_ids``).
        idle_wait:
            Longest sleep on an idle group (NOTIFY wakes it sooner).
        """
        chosen = None if slots is None else tuple(slots)

        def declare(fn: F) -> F:
            self.stream_handlers.append(
                StreamHandler(
                    fn=fn,
                    group=group,
                    slots=chosen,
                    max_events=batch,
                    subscriptions=subscriptions,
                    idle_wait=idle_wait,
                )
            )
            return fn

        return declare


class App(Handlers):
    """A collection of handlers with the database they consume (when no ``Bus`` is at hand).

    Parameters
    ----------
    dsn:
        Where the queues and groups live (None: the DSN rule, ``PGMBUS_DSN`` or the embedded
        cluster).
    """

    def __init__(self, dsn: str | None = None) -> None:
        self.dsn = dsn
