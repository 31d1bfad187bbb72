"""A Celery app on pgmbus for the Celery tests: tasks record what they did in a table."""

from __future__ import annotations

import os
import signal
import socket
import time
from typing import Any

import psycopg
from celery import Celery, Task
from celery.exceptions import Reject
from psycopg.types.json import Jsonb

import pgmbus.contrib.kombu_transport  # noqa: F401  (registers pgmbus://)
from pgmbus.contrib.kombu_transport import url_from_dsn

DSN = os.environ["PGMBUS_CELERY_DSN"]
RESULTS = os.environ["PGMBUS_CELERY_RESULTS"]

app = Celery("tests.contrib.celery_app")
app.conf.update(
    broker_url=url_from_dsn(DSN),
    broker_transport_options={
        "visibility_timeout": float(os.environ.get("PGMBUS_CELERY_LEASE", "30")),
        "polling_interval": float(os.environ.get("PGMBUS_CELERY_POLL", "1")),
        "max_attempts": int(os.environ.get("PGMBUS_CELERY_MAX_ATTEMPTS", "20")),
    },
    broker_connection_retry_on_startup=True,
    # the file system backend, or the database's (pgmbus://) where a test asks for it
    result_backend=(
        url_from_dsn(DSN)
        if os.environ.get("PGMBUS_CELERY_BACKEND") == "pgmbus"
        else f"file://{RESULTS}"
    ),
    task_routes={
        "tests.contrib.celery_app.urgent": {"queue": "high"},
        # every send of alert is posted at once, even inside a transaction
        "tests.contrib.celery_app.alert": {"pgmbus_transactional": False},
    },
    # remote control (celery inspect/control) only where a test asks for it
    worker_enable_remote_control=os.environ.get("PGMBUS_CELERY_REMOTE") == "1",
    # and its workers' events (a dispatcher that enable_events then turns on)
    worker_send_task_events=os.environ.get("PGMBUS_CELERY_REMOTE") == "1",
    worker_hijack_root_logger=False,
    worker_prefetch_multiplier=int(os.environ.get("PGMBUS_CELERY_PREFETCH", "1")),
    task_default_queue="celery",
)


def record(key: str, info: dict[str, Any]) -> int:
    """Insert an effect row; returns how many rows ``key`` has now."""
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO celery_effects (key, worker, info) VALUES (%s, %s, %s)",
            (key, os.environ.get("PGMBUS_CELERY_WORKER", socket.gethostname()), Jsonb(info)),
        )
        row = conn.execute("SELECT count(*) FROM celery_effects WHERE key = %s", (key,)).fetchone()
        assert row is not None
        return int(row[0])


@app.task
def add(x: int, y: int) -> int:
    return x + y


@app.task
def total(values: list[int]) -> int:
    """A chord's body: the sum of its header's results."""
    return sum(values)


@app.task(bind=True)
def stamp(self: Task, key: str) -> None:
    record(key, {"queue": self.request.delivery_info.get("routing_key")})


@app.task
def urgent(key: str) -> str:
    record(key, {})
    return "urgent"


@app.task(bind=True, max_retries=5)
def flaky(self: Task, key: str, failures: int) -> int:
    done = record(key, {})
    if done <= failures:
        raise self.retry(countdown=0.2, exc=RuntimeError(f"failure {done}"))
    return done


@app.task(bind=True, acks_late=True)
def slow_once(self: Task, key: str) -> str:
    """The first run blocks (its worker is killed); a redelivered run finishes at once."""
    starts = record(key + ":start", {})
    if starts == 1:
        time.sleep(120)
    record(key + ":done", {})
    return "done"


@app.task(bind=True, acks_late=True)
def refuse(self: Task, key: str) -> None:
    """Rejected without requeue: the message goes to the dmq."""
    record(key, {"redelivered": bool(self.request.delivery_info.get("redelivered"))})
    raise Reject("refused", requeue=False)


@app.task(bind=True, acks_late=True)
def requeue_once(self: Task, key: str) -> str:
    """Rejected with requeue on its first delivery; done on the second."""
    if record(key, {}) == 1:
        raise Reject("again", requeue=True)
    return "second time"


@app.task
def ordered(key: str, label: str) -> None:
    """Record ``label`` under ``key``: the rows' order is the order the worker ran them."""
    record(key, {"label": label})


@app.task(bind=True, acks_late=True)
def kill_worker(self: Task, key: str) -> None:
    """Kills the worker running it (as an out-of-memory kill would): a poison message."""
    record(key, {"attempt": self.request.delivery_info.get("redelivered")})
    os.kill(os.getpid(), signal.SIGKILL)


@app.task(ignore_result=True)
def noop() -> None:
    """Does nothing: drained by the thousand to look at the transport alone."""


@app.task(bind=True, acks_late=True)
def work_then_die(self: Task, key: str) -> None:
    """Does its work, then its first delivery kills the worker before the ack."""
    if record(key, {"redelivered": bool(self.request.delivery_info.get("redelivered"))}) == 1:
        os.kill(os.getpid(), signal.SIGKILL)


@app.task(bind=True, max_retries=3)
def retry_in_transaction(self: Task, key: str) -> str:
    """Asks for its retry inside a transaction that the retry's exception rolls back."""
    from pgmbus.contrib.celery import transaction

    if record(key, {}) > 1:
        return "retried"
    with psycopg.connect(DSN) as conn, conn.transaction(), transaction(conn):
        conn.execute("INSERT INTO celery_effects (key) VALUES (%s)", (key + ":rolled-back",))
        raise self.retry(countdown=0.1)


@app.task
def alert(key: str) -> None:
    """Routed with pgmbus_transactional=False: runs even if the sender's transaction fails."""
    record(key, {})


@app.task(acks_late=True)
def brief(key: str) -> None:
    """Holds its message a moment (acked when done): a worker's prefetch fills up."""
    time.sleep(0.3)
    record(key, {})
