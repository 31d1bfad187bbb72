"""Handlers that run in child processes (``pool="process"``): each records what it did in the
``ran`` table of the database its message names (``data.dsn``: a child's environment is the
one its pool's first start saw), with its process id and when it started and ended."""

from __future__ import annotations

import os
import time

import psycopg

from pgmbus.handlers import App
from pgmbus.queues import Message

app = App()


def _record(message: Message, started: float, ended: float | None = None) -> None:
    with psycopg.connect(message.data["dsn"], autocommit=True) as conn:
        conn.execute(
            "INSERT INTO ran (queue, iid, attempt, pid, started, ended)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            (message.queue, message.iid, message.attempts, os.getpid(), started, ended),
        )


@app.handler("fast", pool="process", timeout=5, concurrency=2, backoff=0.05, jitter=0)
def fast(message: Message) -> None:
    """Sleeps ``data.sleep`` seconds (default none), then records its start and end."""
    started = time.time()
    time.sleep(message.data.get("sleep", 0))
    _record(message, started, time.time())


@app.handler(
    "slow", pool="process", timeout=0.5, concurrency=1, max_attempts=2, backoff=0.05, jitter=0
)
def slow(message: Message) -> None:
    """Records its start, then sleeps past its limit (and ignores SIGTERM: SIGKILL it is)."""
    import signal

    _record(message, time.time())
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(message.data.get("sleep", 60))
    _record(message, time.time(), time.time())


@app.handler("exits", pool="process", concurrency=1, max_attempts=2, backoff=0.05, jitter=0)
def exits(message: Message) -> None:
    """Dies without a word, as a crash or the OOM killer would."""
    _record(message, time.time())
    os._exit(3)


@app.handler("stubborn", pool="process", concurrency=1, lease=1.0)
def stubborn(message: Message) -> None:
    """No time limit; ignores SIGTERM and sleeps: only a SIGKILL at shutdown ends it."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _record(message, time.time())
    time.sleep(60)
