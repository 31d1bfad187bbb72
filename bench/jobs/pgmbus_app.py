"""The pgmbus worker's app: one handler on the ``jobs`` queue, as ``BENCH_JOBS_MODE`` says.

``defaults``: a plain ``def`` with every option at its default;
``threads4``: a plain ``def`` with ``concurrency=4``; ``async16``: an ``async def`` with
``concurrency=16``. Run with ``pgmbus worker bench.jobs.pgmbus_app:bus --dsn ...``.
"""

from __future__ import annotations

import os

from bench.jobs import record
from pgmbus.queues import Bus, Message

bus = Bus()
_mode = os.environ.get("BENCH_JOBS_MODE", "defaults")

if _mode == "async16":

    @bus.handler("jobs", concurrency=16)
    async def noop_async(message: Message) -> None:
        record.job(int(message.data["n"]))

elif _mode == "threads4":

    @bus.handler("jobs", concurrency=4)
    def noop_threads(message: Message) -> None:
        record.job(int(message.data["n"]))

else:

    @bus.handler("jobs")
    def noop(message: Message) -> None:
        record.job(int(message.data["n"]))
