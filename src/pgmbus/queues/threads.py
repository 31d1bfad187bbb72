"""The threads a worker runs its plain ``def`` handlers in: started once, reused for every job."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any

_Job = tuple[
    Callable[[Any], Any], Any, asyncio.AbstractEventLoop, asyncio.Future[Any], threading.Event
]


class HandlerThreads:
    """Up to ``size`` daemon threads, started as jobs need them and kept for the next ones.

    Daemon threads, unlike those of :class:`concurrent.futures.ThreadPoolExecutor` (which the
    interpreter joins at exit): a handler that never returns must not hold up the process's
    exit once the worker gave its message back. The caller keeps at most ``size`` jobs in the
    threads at once (the worker's slots), so a job never waits behind another one.
    """

    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()
        self._settled: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        self._waking = False

    def submit(
        self, fn: Callable[[Any], Any], arg: Any
    ) -> tuple[asyncio.Future[Any], threading.Event]:
        """Run ``fn(arg)`` in a thread: a future of its result (cancelling it only detaches the
        job) and an event set once the call has returned, however it ended."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        returned = threading.Event()
        with self._lock:
            if self._idle == 0 and len(self._threads) < self.size:
                thread = threading.Thread(
                    target=self._work, name=f"pgmbus:{self.name}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
            else:
                self._idle -= 1
        self._jobs.put((fn, arg, loop, future, returned))
        return future, returned

    def close(self) -> None:
        """Let the threads end once their jobs have (a runaway one is left to the process)."""
        for _ in self._threads:
            self._jobs.put(None)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, arg, loop, future, returned = job
            try:
                result, error = fn(arg), None
            except BaseException as exc:  # handed to the loop, which decides
                result, error = None, exc
            with self._lock:
                self._idle += 1
                self._settled.append((future, result, error))
                wake = not self._waking  # one wake-up of the loop for the results of a burst
                self._waking = True
            returned.set()
            if wake:
                with contextlib.suppress(RuntimeError):  # the loop is gone: the worker stopped
                    loop.call_soon_threadsafe(self._settle_all)

    def _settle_all(self) -> None:
        with self._lock:
            settled, self._settled = self._settled, []
            self._waking = False
        for future, result, error in settled:
            _settle(future, result, error)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # cancelled: the worker stopped waiting (timeout, abort)
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
