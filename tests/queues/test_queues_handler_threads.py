"""The threads of plain ``def`` handlers: bursts handed over with one wake-up, slow jobs still
run side by side, a job cancelled while it waits for a thread is not run."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from pgmbus.queues import threads as threads_module
from pgmbus.queues.threads import HANDOFF_WAIT, HandlerThreads


def test_a_burst_of_fast_jobs_wakes_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """20 jobs submitted in one loop turn run in one thread (a thread per job before: each
    hand-over a context switch and a pass of the GIL). The escalation to more threads is put
    out of reach: on a loaded machine a thread's start alone can outlast ``HANDOFF_WAIT``."""
    monkeypatch.setattr(threads_module, "HANDOFF_WAIT", 30.0)

    async def main() -> set[int]:
        threads = HandlerThreads(10, "burst")
        seen: list[int] = []
        futures = [threads.submit(lambda n: seen.append(threading.get_ident()), n)[0]
                   for n in range(20)]  # fmt: skip
        await asyncio.gather(*futures)
        threads.close()
        return set(seen)

    assert len(asyncio.run(main())) == 1


def test_slow_jobs_of_a_burst_still_run_side_by_side() -> None:
    """A burst of 10 jobs of 0.3 s on 10 threads takes about 0.3 s, not 3 s: the jobs left
    waiting behind a slow one get threads of their own after ``HANDOFF_WAIT``."""

    async def main() -> tuple[float, int]:
        threads = HandlerThreads(10, "slow")
        used: set[int] = set()

        def slow(_n: int) -> None:
            used.add(threading.get_ident())
            time.sleep(0.3)

        start = time.monotonic()
        await asyncio.gather(*(threads.submit(slow, n)[0] for n in range(10)))
        took = time.monotonic() - start
        threads.close()
        return took, len(used)

    took, used = asyncio.run(main())
    assert used == 10
    assert took < 0.3 + 20 * HANDOFF_WAIT + 0.5  # far below the 3 s of one thread


def test_a_job_cancelled_while_waiting_for_a_thread_is_not_run() -> None:
    """At abort the worker cancels the calls in hand and gives their messages back: one that
    had not started yet must not run after that (it would run a message given back)."""

    async def main() -> tuple[list[str], bool, Any]:
        threads = HandlerThreads(1, "cancel")
        ran: list[str] = []
        release = threading.Event()

        def job(name: str) -> str:
            if name == "first":
                release.wait(10)
            ran.append(name)
            return name

        first, first_call = threads.submit(job, "first")
        second, second_call = threads.submit(job, "second")
        await asyncio.sleep(0.05)  # the first runs, the second waits for the one thread
        second.cancel()
        release.set()
        result = await first
        for _ in range(200):  # the thread ends the first, then passes the second by
            if second_call.is_set():
                break
            await asyncio.sleep(0.01)
        threads.close()
        return ran, second_call.is_set() and first_call.is_set(), result

    ran, returned, result = asyncio.run(main())
    assert ran == ["first"]
    assert returned
    assert result == "first"


def test_errors_reach_the_future_and_the_threads_end_at_close() -> None:
    async def main() -> tuple[BaseException | None, list[threading.Thread]]:
        threads = HandlerThreads(2, "errors")
        started: list[threading.Thread] = []

        def fail(_n: int) -> None:
            started.append(threading.current_thread())
            raise ValueError("boom")

        future, call = threads.submit(fail, 1)
        error = None
        try:
            await future
        except ValueError as exc:
            error = exc
        assert call.is_set()
        threads.close()
        return error, started

    error, started = asyncio.run(main())
    assert isinstance(error, ValueError)
    started[0].join(5)
    assert not started[0].is_alive()
