"""The Celery app of the three Celery sides' workers; the broker URL is ``BENCH_JOBS_BROKER``."""

from __future__ import annotations

import os

from bench.jobs import record
from bench.jobs.side_celery import make_app

app = make_app(os.environ["BENCH_JOBS_BROKER"])
app.conf.worker_hijack_root_logger = False


@app.task(name="bench_jobs.noop")  # type: ignore[untyped-decorator]
def noop(n: int) -> None:
    record.job(n)
