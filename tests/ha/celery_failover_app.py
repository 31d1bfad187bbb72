"""A Celery app on a multi-host ``pgmbus://`` broker URL for the failover scenario: its task
records each run in ``chaos_results`` on the same database, retrying its own write through the
failover (the broker connection is the transport's business; this write is the task's)."""

from __future__ import annotations

import os
import time

import psycopg
from celery import Celery

import pgmbus.contrib.kombu_transport  # noqa: F401  (registers pgmbus://)
from pgmbus.contrib.kombu_transport import url_from_dsn
from pgmbus.reconnect import Backoff, is_transient

DSN = os.environ["CHAOS_RESULTS_DSN"]  # host=a,b port=p,q ... target_session_attrs=read-write
WORKLOAD = os.environ.get("CHAOS_WORKLOAD", "celery")

app = Celery("tests.ha.celery_failover_app")
app.conf.update(
    # pgmbus://postgres@/db?host=127.0.0.1%2C127.0.0.1&port=p%2Cq&target_session_attrs=...
    broker_url=url_from_dsn(DSN),
    broker_transport_options={"visibility_timeout": 10.0, "polling_interval": 0.5},
    broker_connection_retry_on_startup=True,
    broker_connection_max_retries=None,  # a failover is a broker outage of seconds: wait
    task_acks_late=True,
    task_ignore_result=True,
    worker_hijack_root_logger=False,
    worker_prefetch_multiplier=1,
    task_default_queue="celery",
)


@app.task(name="failover.record")
def record(value: str) -> None:
    backoff = Backoff(cap=1.0)
    deadline = time.monotonic() + 120
    while True:
        try:
            with psycopg.connect(DSN, autocommit=True) as conn:
                conn.execute(
                    "INSERT INTO chaos_results (workload, value, message) VALUES (%s, %s, %s)",
                    (WORKLOAD, value, record.request.id or ""),
                )
            return
        except psycopg.Error as exc:
            if not is_transient(exc) or time.monotonic() > deadline:
                raise
            time.sleep(backoff.next())
