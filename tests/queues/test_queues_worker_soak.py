"""A worker whose handler always fails keeps flat memory (its error list is bounded)."""

from __future__ import annotations

import asyncio
import logging
import tracemalloc

import pytest

from pgmbus.queues import AsyncBus
from pgmbus.queues.model import Message
from pgmbus.queues.worker import ERRORS_KEPT, WorkerConfig, run_worker

WARM, END = 400, 2400


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_failing_handler_soak_keeps_memory_flat(autodb: str) -> None:
    samples: dict[str, int] = {}

    async def main() -> tuple[int, int, int]:
        stop = asyncio.Event()
        calls = 0

        async def handler(message: Message) -> None:
            nonlocal calls
            calls += 1
            if calls == WARM:
                samples["warm"] = tracemalloc.get_traced_memory()[0]
            if calls == END:
                samples["end"] = tracemalloc.get_traced_memory()[0]
                stop.set()
            raise RuntimeError(f"handler failed on call {calls}: " + "x" * 200)

        config = WorkerConfig(
            queue="jobs",
            concurrency=2,
            lease=30.0,
            max_attempts=1_000_000,
            backoff_base=0.0,
            backoff_max=0.0,
            poll_interval=0.1,
        )
        async with AsyncBus(autodb, max_size=4, poll_interval=0.1, rotate_every=None) as bus:
            for i in range(4):
                await bus.post("jobs", {"n": i})
            stats = await run_worker(bus, handler, config, stop)
        return stats.failed, len(stats.errors), stats.retried

    # The worker logs every failure. A real process writes the lines out; pytest keeps the
    # captured records of the test in memory (whenever an earlier test lowered the root
    # logger's level), which is not the worker's memory: the measure leaves logging out.
    logging.disable(logging.CRITICAL)
    tracemalloc.start()
    try:
        failed, kept, retried = asyncio.run(main())
    finally:
        tracemalloc.stop()
        logging.disable(logging.NOTSET)
    growth = samples["end"] - samples["warm"]
    # 2,000 more failures: an unbounded list of ~300-byte reasons alone would grow ~600 kB
    assert growth < 150_000, f"memory grew {growth} bytes over {END - WARM} failures"
    assert failed >= END and retried >= END - 2, "every failure was counted and retried"
    assert kept == ERRORS_KEPT, "only the last reasons are kept"
