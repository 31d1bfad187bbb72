"""SQL-only consumers with the upkeep as a pg_cron job (``pgmbus install --schedule``).

``queue_soak_sql``'s work (two producers posting 50 per call, two consumers claiming 50 per
call from SQL, nobody calling ``mbus.rotate_queue``), with the claims' own upkeep off on both
sides. Candidate: the pg_cron job of ``pgmbus.schedule``, ``CALL mbus.upkeep_run(50)`` every
minute (pg_cron 1.4's finest schedule): every queue rotated about once a second, each call in
its own transaction, then ``mbus.maintain()``.
Baseline: no upkeep at all. Needs a server that preloads pg_cron (the embedded clusters do
when Debian's package is installed). ``extra`` as in ``queue_soak``; sizes are sampled per
window, so with a one-minute job use a size that lasts several minutes (``--size 3000000``).
"""

from __future__ import annotations

from bench.harness import Measurement
from bench.scenarios import queue_soak, queue_soak_sql
from bench.scenarios._queues import fresh_queue
from pgmbus import schedule

name = "queue_soak_cron"
unit = "messages"
goal = "size flat with the pg_cron upkeep job vs growing without upkeep; rate >= 1x"
default_size = 3_000_000
default_rounds = 1


def setup(dsn: str, size: int) -> None:
    fresh_queue(dsn, "soak")


def candidate(dsn: str, size: int) -> Measurement:
    schedule.schedule_upkeep(dsn, "* * * * *")
    try:
        return queue_soak_sql._counts(
            dsn,
            queue_soak._soak(
                dsn, size, "mbus.q_soak", queue_soak_sql._off, queue_soak_sql._claim, upkeep=False
            ),
        )
    finally:
        schedule.unschedule_upkeep(dsn)


def baseline(dsn: str, size: int) -> Measurement:
    return queue_soak_sql.baseline(dsn, size)
