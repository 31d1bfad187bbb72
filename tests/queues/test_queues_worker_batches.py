"""The queue worker's round trips: claims sized by free slots, acks and lease extensions batched,
one wake-up per post, reused threads; and the batched ack/extend of the bus."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from pgmbus.errors import InvalidArgument
from pgmbus.handlers import QueueHandler
from pgmbus.queues import AsyncBus, Message
from pgmbus.queues.loop import QueueLoop


class CountingBus(AsyncBus):
    """A real bus that counts the calls the worker makes (statements it sends)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: Counter[str] = Counter()
        self.acked: list[int] = []

    async def lease(self, *args: Any, **kwargs: Any) -> list[Message]:
        self.calls["lease"] += 1
        return await super().lease(*args, **kwargs)

    async def ack(self, message: Message, **kwargs: Any) -> None:
        self.calls["ack"] += 1
        await super().ack(message, **kwargs)

    async def ack_many(self, messages: Any, **kwargs: Any) -> list[Message]:
        self.calls["ack"] += 1
        self.acked.append(len(messages))
        return await super().ack_many(messages, **kwargs)


async def _run_until(
    bus: AsyncBus, spec: QueueHandler, done: asyncio.Event, within: float = 30.0
) -> QueueLoop:
    loop = QueueLoop(bus, spec)
    stop = asyncio.Event()
    task = asyncio.create_task(loop.run(stop, asyncio.Event()))
    try:
        await asyncio.wait_for(done.wait(), within)
    finally:
        stop.set()
        await task
    return loop


def test_a_backlog_is_claimed_and_acked_in_batches(db_dsn: str) -> None:
    """200 queued jobs, 10 slots: claims of up to 20 and acks shared by the jobs that end
    together, every job acked once (the loop used to send a lease and an ack per job)."""
    jobs = 200

    async def main() -> tuple[QueueLoop, CountingBus]:
        bus = CountingBus(db_dsn, max_size=20, poll_interval=0.2)
        async with bus:
            await bus.create_queue("jobs")
            await bus.post_batch("jobs", [{"n": i} for i in range(jobs)])
            seen: list[int] = []
            done = asyncio.Event()

            async def handler(message: Message) -> None:
                seen.append(message.data["n"])
                if len(seen) == jobs:
                    done.set()

            spec = QueueHandler(handler, "jobs", concurrency=10)
            loop = await _run_until(bus, spec, done)
            assert sorted(seen) == list(range(jobs))
            assert (await bus.stats("jobs"))[0].depth == 0, "every job was acked"
            return loop, bus

    loop, bus = asyncio.run(main())
    assert loop.stats.done == jobs and loop.stats.lost == 0
    assert sum(bus.acked) == jobs
    assert bus.calls["lease"] <= jobs / 5, f"{bus.calls['lease']} claims for {jobs} jobs"
    assert bus.calls["ack"] <= jobs / 4, f"{bus.calls['ack']} ack statements for {jobs} jobs"


def test_a_post_wakes_one_claim_not_every_idle_slot(db_dsn: str) -> None:
    """8 idle slots, one post: one claim answers it (each slot used to LISTEN and claim)."""

    async def main() -> int:
        bus = CountingBus(db_dsn, max_size=20, poll_interval=5.0)
        async with bus:
            await bus.create_queue("jobs")
            done = asyncio.Event()

            async def handler(message: Message) -> None:
                done.set()

            loop = QueueLoop(bus, QueueHandler(handler, "jobs", concurrency=8, poll_interval=5.0))
            stop = asyncio.Event()
            task = asyncio.create_task(loop.run(stop, asyncio.Event()))
            for _ in range(200):  # until the loop listens: its claims have come back empty
                await asyncio.sleep(0.05)
                if bus.calls["lease"] >= 2:
                    break
            before = bus.calls["lease"]
            await bus.post("jobs", {"n": 1})
            await asyncio.wait_for(done.wait(), 10)
            await asyncio.sleep(0.3)  # any other slot woken would claim now
            claims = bus.calls["lease"] - before
            stop.set()
            await task
            return claims

    assert asyncio.run(main()) == 1


def test_plain_def_handlers_reuse_their_threads(db_dsn: str) -> None:
    """60 jobs on 3 slots run in at most 3 threads (a new thread per job before)."""
    jobs = 60

    async def main() -> set[threading.Thread]:
        async with AsyncBus(db_dsn, max_size=10, poll_interval=0.2) as bus:
            await bus.create_queue("jobs")
            await bus.post_batch("jobs", [{"n": i} for i in range(jobs)])
            threads: list[threading.Thread] = []
            done = asyncio.Event()
            loop_ = asyncio.get_running_loop()

            def handler(message: Message) -> None:
                threads.append(threading.current_thread())  # kept alive: identity counts
                if len(threads) == jobs:
                    loop_.call_soon_threadsafe(done.set)

            await _run_until(bus, QueueHandler(handler, "jobs", concurrency=3), done)
            return set(threads)

    used = asyncio.run(main())
    assert 1 <= len(used) <= 3 and threading.current_thread() not in used


def test_ack_many_and_extend_many_report_lost_leases(db_dsn: str) -> None:
    """The batch is all or none in SQL; a lost lease among them is returned, the rest done."""

    async def main() -> None:
        async with AsyncBus(db_dsn, max_size=4) as bus:
            await bus.create_queue("jobs")
            await bus.create_queue("other")
            await bus.post_batch("jobs", [{"n": i} for i in range(4)])
            got = await bus.lease("jobs", limit=4, lease=30)
            assert len(got) == 4
            await bus.nack(got[1])  # its lease ends: no longer held
            assert await bus.extend_many(got, timedelta(seconds=60)) == [got[1]]
            assert await bus.ack_many(got) == [got[1]]
            again = await bus.lease("jobs", limit=4, lease=30)
            assert [m.iid for m in again] == [got[1].iid], "the others are acked"
            assert await bus.ack_many(again) == []
            assert (await bus.stats("jobs"))[0].depth == 0
            assert await bus.ack_many([]) == []
            await bus.post("other", {"n": 9})
            (other,) = await bus.lease("other", lease=30)
            with pytest.raises(InvalidArgument, match="one queue"):
                await bus.ack_many([got[0], other])
            unleased = dataclasses.replace(other, lease_token=None)
            with pytest.raises(InvalidArgument, match="not claimed with a lease"):
                await bus.ack_many([unleased])

    asyncio.run(main())
