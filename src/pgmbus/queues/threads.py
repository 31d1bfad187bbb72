"""The threads a worker runs its plain ``def`` handlers in: started once, reused for every job.

Jobs are handed over in bursts: the jobs a loop turn submits go to a shared queue and wake one
thread, which runs them one after the other; a burst not taken within :data:`HANDOFF_WAIT`
(its first job is a slow one) wakes a thread for each job still queued. A fast handler thus
costs one thread wake-up per burst, not one per job (each wake-up is a context switch and a
hand-over of the GIL), and a slow one holds up the jobs behind it for at most that wait.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
from collections.abc import Callable
from typing import Any

HANDOFF_WAIT = 0.002
"""Seconds a queued job may wait for the awake threads before more threads are woken."""


class Call:
    """One job in the threads: its future (cancelling it only detaches the job, or skips it
    while it waits for a thread) and whether the call has returned, however it ended."""

    __slots__ = ("arg", "error", "fn", "future", "result", "returned")

    def __init__(self, fn: Callable[[Any], Any], arg: Any, future: asyncio.Future[Any]) -> None:
        self.fn = fn
        self.arg = arg
        self.future = future
        self.returned = False
        self.result: Any = None
        self.error: BaseException | None = None

    def is_set(self) -> bool:
        """True once the call has returned (or was skipped: cancelled before it started)."""
        return self.returned


class HandlerThreads:
    """Up to ``size`` daemon threads, started as jobs need them and kept for the next ones.

    Daemon threads, unlike those of :class:`concurrent.futures.ThreadPoolExecutor` (which the
    interpreter joins at exit): a handler that never returns must not hold up the process's
    exit once the worker gave its message back. The caller keeps at most ``size`` jobs in the
    threads at once (the worker's slots), so once woken every queued job has a thread.
    """

    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self._lock = threading.Lock()
        self._queued: collections.deque[Call] = collections.deque()
        self._wake = threading.Semaphore(0)  # one release per thread woken
        self._threads: list[threading.Thread] = []
        self._awake = 0  # threads that look at the queue before they sleep again
        self._running = 0  # awake threads inside a handler call
        self._closed = False
        self._dispatching = False  # a dispatch is due this loop turn
        self._escalating = False  # a check for jobs left waiting is due
        self._settled: list[Call] = []
        self._waking = False

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> tuple[asyncio.Future[Any], Call]:
        """Run ``fn(arg)`` in a thread: a future of its result and the call (``is_set()``
        once it has returned)."""
        loop = asyncio.get_running_loop()
        call = Call(fn, arg, loop.create_future())
        with self._lock:
            self._queued.append(call)
        if not self._dispatching:  # one wake-up for every job submitted in this loop turn
            self._dispatching = True
            loop.call_soon(self._dispatch, loop)
        return call.future, call

    def close(self) -> None:
        """Let the threads end once their jobs have (a runaway one is left to the process)."""
        with self._lock:
            self._closed = True
            count = len(self._threads)
        if count:
            self._wake.release(count)

    def _dispatch(self, loop: asyncio.AbstractEventLoop) -> None:
        self._dispatching = False
        with self._lock:
            # an awake thread between calls takes the burst; else wake one
            if self._queued and self._awake - self._running < 1:
                self._rouse(1)
            # as many threads between calls as jobs queued: each has one, nothing to check
            if len(self._queued) <= self._awake - self._running or self._escalating:
                return
            self._escalating = True
        loop.call_later(HANDOFF_WAIT, self._escalate)

    def _escalate(self) -> None:
        """Jobs still queued wait behind slow calls: wake a thread for each of them."""
        with self._lock:
            self._escalating = False
            self._rouse(len(self._queued))

    def _rouse(self, count: int) -> None:
        """Wake (or start) up to ``count`` more threads; the lock is held."""
        asleep = len(self._threads) - self._awake
        woken = min(count, asleep)
        started = min(count - woken, self.size - len(self._threads))
        self._awake += woken + started
        if woken:
            self._wake.release(woken)
        for _ in range(started):
            thread = threading.Thread(
                target=self._work, args=(True,), name=f"pgmbus:{self.name}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _work(self, awake: bool) -> None:
        while True:
            if not awake:
                self._wake.acquire()
            awake = False
            with self._lock:
                if self._closed:
                    self._awake -= 1
                    return
                call = self._next()
            while call is not None:
                if not call.future.done():  # else cancelled while queued (abort): not run
                    try:
                        call.result = call.fn(call.arg)
                    except BaseException as exc:  # handed to the loop, which decides
                        call.error = exc
                call.returned = True
                loop = call.future.get_loop()
                with self._lock:
                    self._running -= 1
                    self._settled.append(call)
                    wake = not self._waking  # one wake-up of the loop for a burst's results
                    self._waking = True
                    call = self._next()
                if wake:
                    with contextlib.suppress(RuntimeError):  # the loop is gone: it stopped
                        loop.call_soon_threadsafe(self._settle_all)

    def _next(self) -> Call | None:
        """The next queued call, now running; None (and asleep) when there is none. The lock
        is held."""
        if self._queued:
            self._running += 1
            return self._queued.popleft()
        self._awake -= 1
        return None

    def _settle_all(self) -> None:
        with self._lock:
            settled, self._settled = self._settled, []
            self._waking = False
        for call in settled:
            if call.future.done():  # cancelled: the worker stopped waiting (timeout, abort)
                continue
            if call.error is not None:
                call.future.set_exception(call.error)
            else:
                call.future.set_result(call.result)
