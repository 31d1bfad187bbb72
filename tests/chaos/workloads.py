"""Workloads of the chaos suite: producers and consumers that record a history and recover.

Every workload runs in a thread, is bounded in operations and time, and keeps going through
database errors by itself (that is under test); an unexpected exception ends the thread and is
kept in ``crashed`` so the scenario fails loudly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout

from pgmbus import streams
from pgmbus.queues import AsyncBus, Bus
from pgmbus.queues.model import Message
from pgmbus.queues.worker import WorkerConfig, WorkerStats, run_worker
from pgmbus.reconnect import Backoff, is_transient
from pgmbus.streams.worker import StreamWorker
from pgmbus.testing.chaos import History
from pgmbus.testing.chaos.history import Unknown

log = logging.getLogger("pgmbus.chaos")

INSERT_RESULT = "INSERT INTO chaos_results (workload, value, message) VALUES (%s, %s, %s)"


class Workload(threading.Thread):
    """A bounded loop in a thread; ``crashed`` holds what killed it, if anything did."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.stop_event = threading.Event()
        self.crashed: str | None = None

    def run(self) -> None:
        try:
            self.body()
        except BaseException as exc:
            log.exception("workload %s crashed", self.name)
            self.crashed = f"{type(exc).__name__}: {exc}"

    def body(self) -> None:
        raise NotImplementedError

    def stop(self, timeout: float = 30.0) -> None:
        self.stop_event.set()
        self.join(timeout)
        if self.is_alive():
            self.crashed = self.crashed or f"did not stop within {timeout}s"


def _pause(stop: threading.Event, backoff: Backoff) -> None:
    stop.wait(backoff.next())


class QueueProducer(Workload):
    """Post ``<name>/<n>`` values, autocommit (through a Bus) or in a transaction of its own.

    Each value has a client-given iid; an attempt whose outcome is unknown (the connection
    broke during the statement or the commit) is retried with the same iid until one is
    acknowledged (at most ``tries`` attempts).
    """

    def __init__(
        self,
        history: History,
        workload: str,
        name: str,
        dsn: str,
        queue: str,
        *,
        transactional: bool,
        max_ops: int,
        rate: float = 100.0,
        tries: int = 20,
    ) -> None:
        super().__init__(name)
        self.history, self.workload, self.dsn, self.queue = history, workload, dsn, queue
        self.transactional, self.max_ops, self.rate, self.tries = (
            transactional,
            max_ops,
            rate,
            tries,
        )
        self.ops = 0

    def body(self) -> None:
        with Bus(self.dsn, max_size=2, rotate_every=None) as bus:
            conn: psycopg.Connection[Any] | None = None
            backoff = Backoff(cap=1.0)
            for seq in range(1, self.max_ops + 1):
                if self.stop_event.is_set():
                    break
                value = f"{self.name}/{seq}"
                iid = f"chaos:{self.workload}:{value}"
                for _ in range(self.tries):
                    if self.transactional and (conn is None or conn.closed):
                        conn = self._connect(backoff)
                        if conn is None:
                            return
                    if self._attempt(bus, conn, value, iid):
                        backoff.reset()
                        break
                    if conn is not None:
                        conn.close()
                    _pause(self.stop_event, backoff)
                self.ops += 1
                time.sleep(1.0 / self.rate)
            if conn is not None:
                conn.close()

    def _connect(self, backoff: Backoff) -> psycopg.Connection[Any] | None:
        while not self.stop_event.is_set():
            try:
                return psycopg.connect(self.dsn)
            except psycopg.OperationalError:
                _pause(self.stop_event, backoff)
        return None

    def _attempt(
        self, bus: Bus, conn: psycopg.Connection[Any] | None, value: str, iid: str
    ) -> bool:
        """One recorded attempt; True when acknowledged."""
        ok = False
        try:
            with self.history.op(self.workload, self.name, "enqueue", value):
                if conn is None:
                    try:
                        bus.post(self.queue, {"v": value}, iid=iid)
                    except PoolTimeout:
                        raise  # no connection: it certainly did not happen (fail)
                    except Exception as exc:
                        if is_transient(exc):
                            raise Unknown("autocommit post") from exc
                        raise
                else:
                    bus.post(self.queue, {"v": value}, iid=iid, conn=conn)  # before COMMIT: fail
                    try:
                        conn.commit()
                    except Exception as exc:
                        if is_transient(exc):
                            raise Unknown("commit") from exc
                        raise
                ok = True
        except Exception as exc:
            if not is_transient(exc):
                raise
        return ok


class TxQueueConsumer(Workload):
    """Consume in a transaction that also writes the results: exactly once."""

    def __init__(self, workload: str, dsn: str, queue: str, *, batch: int = 10) -> None:
        super().__init__(f"{workload}-consumer")
        self.workload, self.dsn, self.queue, self.batch = workload, dsn, queue, batch
        self.reconnects = 0

    def body(self) -> None:
        backoff = Backoff(cap=1.0)
        with Bus(self.dsn, max_size=2, poll_interval=0.5) as bus:
            while not self.stop_event.is_set():
                try:
                    with psycopg.connect(self.dsn) as conn:
                        while not self.stop_event.is_set():
                            got = bus.consume(self.queue, limit=self.batch, wait=0.5, conn=conn)
                            for m in got:
                                conn.execute(INSERT_RESULT, (self.workload, m.data["v"], str(m.id)))
                            conn.commit()
                            backoff.reset()
                except Exception as exc:
                    if not is_transient(exc):
                        raise
                    self.reconnects += 1
                    _pause(self.stop_event, backoff)


class LeaseQueueWorker(Workload):
    """``pgmbus worker``'s loop (run_worker) with a handler that records each handling in its
    own autocommit statement before the ack: at least once."""

    def __init__(self, workload: str, dsn: str, queue: str, *, concurrency: int = 2) -> None:
        super().__init__(f"{workload}-worker")
        self.workload, self.dsn, self.queue = workload, dsn, queue
        self.config = WorkerConfig(
            queue=queue,
            concurrency=concurrency,
            lease=4.0,
            max_attempts=1000,
            backoff_base=0.05,
            backoff_max=0.5,
            poll_interval=0.5,
        )
        self.stats: WorkerStats | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_async: asyncio.Event | None = None

    def body(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_async = asyncio.Event()
        results: list[psycopg.AsyncConnection[Any]] = []

        async def handler(message: Message) -> None:
            if results and (results[0].closed or results[0].broken):
                await results.pop().close()
            if not results:
                results.append(await psycopg.AsyncConnection.connect(self.dsn, autocommit=True))
            await results[0].execute(
                INSERT_RESULT, (self.workload, message.data["v"], str(message.id))
            )

        bus = AsyncBus(self.dsn, max_size=3 * self.config.concurrency + 1, poll_interval=0.5)
        async with bus:
            self.stats = await run_worker(bus, handler, self.config, self._stop_async)
        for c in results:
            await c.close()

    def stop(self, timeout: float = 30.0) -> None:
        if self._loop is not None and self._stop_async is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the thread has ended
                self._loop.call_soon_threadsafe(self._stop_async.set)
        super().stop(timeout)


class StreamPublisher(Workload):
    """Publish ``<name>/<n>`` with key ``<name>`` in a transaction each; an unknown outcome
    is recorded and not retried (streams have no idempotency key)."""

    def __init__(
        self,
        history: History,
        workload: str,
        name: str,
        dsn: str,
        topic: str,
        *,
        max_ops: int,
        rate: float = 100.0,
    ) -> None:
        super().__init__(name)
        self.history, self.workload, self.dsn, self.topic = history, workload, dsn, topic
        self.max_ops, self.rate = max_ops, rate
        self.ops = 0

    def body(self) -> None:
        backoff = Backoff(cap=1.0)
        conn: psycopg.Connection[Any] | None = None
        for seq in range(1, self.max_ops + 1):
            if self.stop_event.is_set():
                break
            value = f"{self.name}/{seq}"
            while conn is None or conn.closed:
                if self.stop_event.is_set():
                    return
                try:
                    conn = psycopg.connect(self.dsn)
                except psycopg.OperationalError:
                    _pause(self.stop_event, backoff)
            try:
                with self.history.op(self.workload, self.name, "enqueue", value):
                    streams.publish(conn, self.topic, {"v": value}, key=self.name)
                    try:
                        conn.commit()
                    except Exception as exc:
                        if is_transient(exc):
                            raise Unknown("commit") from exc
                        raise
                backoff.reset()
            except Exception as exc:
                if not is_transient(exc):
                    raise
                conn.close()
                _pause(self.stop_event, backoff)
            self.ops += 1
            time.sleep(1.0 / self.rate)
        if conn is not None:
            conn.close()


class StreamGroupWorker(Workload):
    """A StreamWorker whose handler writes each event's result in the batch's transaction (one
    slot of a slotted group, or a group of subscriptions, when asked)."""

    def __init__(
        self,
        workload: str,
        dsn: str,
        group: str,
        *,
        slot: int | None = None,
        subscriptions: bool = False,
    ) -> None:
        super().__init__(f"{workload}-group" + ("" if slot is None else f"-{slot}"))
        self.workload = workload

        def handler(conn: psycopg.Connection[Any], event: streams.Event) -> None:
            if subscriptions and not event.subscription_ids:
                raise AssertionError(f"event {event.id} matched no subscription")
            conn.execute(INSERT_RESULT, (self.workload, event.payload["v"], str(event.id)))

        self.worker = StreamWorker(
            dsn,
            group,
            handler,
            slot=slot,
            subscriptions=subscriptions,
            batch=50,
            maintain_every=None,
        )

    def body(self) -> None:
        self.worker.run(stop=self.stop_event.is_set, idle_wait=0.5, backoff=Backoff(cap=1.0))


def wait_until(done: Callable[[], bool], timeout: float, every: float = 0.2) -> bool:
    """Poll ``done`` until it holds or ``timeout`` seconds pass; errors count as not done."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if done():
                return True
        except psycopg.Error:
            pass
        time.sleep(every)
    return False
