"""Destructive commands behave alike: a question when messages would be lost, ``--yes`` skips it,
no question when nothing would be lost, and no terminal to ask on changes nothing."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

import psycopg
import pytest

from pgmbus import streams
from pgmbus.queues import Bus
from tests.cli.conftest import ROOT, error_line, process_env, run


def _queues(dsn: str) -> set[str]:
    with Bus(dsn) as bus:
        return {q.qname for q in bus.queues()}


def _depth(dsn: str, queue: str, consumer: str = "default") -> int:
    with Bus(dsn) as bus:
        return sum(r.depth for r in bus.stats(queue) if r.cname == consumer)


@pytest.fixture
def pending(db_dsn: str) -> str:
    """Queue ``jobs`` (consumers default and audit) with two pending messages."""
    with Bus(db_dsn) as bus:
        bus.create_queue("jobs")
        bus.create_consumer("jobs", "audit")
        bus.post("jobs", {"n": 1})
        bus.post("jobs", {"n": 2})
    return db_dsn


@pytest.mark.parametrize(
    ("command", "lost"),
    [
        (("queue", "drop", "jobs"), 4),  # two messages, two consumers
        (("queue", "drop-consumer", "jobs", "audit"), 2),
        (("queue", "consumer", "jobs", "audit", "--drop"), 2),
        (("queue", "purge", "jobs"), 4),
        (("queue", "purge", "jobs", "-c", "audit"), 2),
    ],
)
def test_without_a_terminal_and_without_yes_nothing_is_lost(
    pending: str, command: tuple[str, ...], lost: int
) -> None:
    refused = run(*command, "--dsn", pending)
    assert refused.exit_code == 2
    line = error_line(refused)
    assert "--yes" in line and f"{lost} pending deliveries" in line and "nothing changed" in line
    assert "jobs" in _queues(pending)
    assert (_depth(pending, "jobs"), _depth(pending, "jobs", "audit")) == (2, 2)
    done = run(*command, "--yes", "--dsn", pending)
    assert done.exit_code == 0, done.output


def test_drop_says_what_it_did_with_yes(pending: str) -> None:
    assert run("queue", "drop", "jobs", "-y", "--dsn", pending).exit_code == 0
    assert "jobs" not in _queues(pending)


def test_nothing_to_lose_needs_no_question(db_dsn: str) -> None:
    with Bus(db_dsn) as bus:
        bus.create_queue("empty")
        bus.create_consumer("empty", "other")
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        streams.create_group(conn, "g")
    assert run("queue", "purge", "empty", "--dsn", db_dsn).exit_code == 0
    assert run("queue", "drop-consumer", "empty", "other", "--dsn", db_dsn).exit_code == 0
    assert run("queue", "drop", "empty", "--dsn", db_dsn).exit_code == 0
    assert run("streams", "drop-group", "g", "--dsn", db_dsn).exit_code == 0
    assert "empty" not in _queues(db_dsn)


def test_dmq_delete_asks_first(db_dsn: str) -> None:
    with Bus(db_dsn) as bus:
        bus.create_queue("jobs")
        bus.post("jobs", {"n": 1})
        [message] = bus.lease("jobs", limit=1, lease=30)
        dmq_id = bus.bury(message, "poison")
    refused = run("dmq", "delete", str(dmq_id), "--dsn", db_dsn)
    assert refused.exit_code == 2 and "1 dead messages" in error_line(refused)
    with Bus(db_dsn) as bus:
        assert [d.dmq_id for d in bus.dmq("jobs")] == [dmq_id]
    assert run("dmq", "delete", str(dmq_id), "--yes", "--dsn", db_dsn).exit_code == 0


def _on_a_terminal(dsn: str, answer: str, *args: str) -> tuple[int, str]:
    """Run ``pgmbus ARGS`` with a terminal on stdin, answer its question, return (status, text)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgmbus", *args, "--dsn", dsn],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=ROOT,
        env=process_env(),
    )
    os.close(follower)
    seen = b""
    answered = False
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # the process closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
            if not answered and b"Go on?" in seen:
                os.write(leader, answer.encode() + b"\n")
                answered = True
            if proc.poll() is not None and not ready:
                break
        status = proc.wait(timeout=30)
    finally:
        os.close(leader)
    return status, seen.decode(errors="replace")


def test_on_a_terminal_the_question_decides(pending: str) -> None:
    status, text = _on_a_terminal(pending, "n", "queue", "drop", "jobs")
    assert "dropping queue jobs deletes 4 pending deliveries. Go on?" in text
    assert status == 1 and "nothing changed" in text
    assert "jobs" in _queues(pending) and _depth(pending, "jobs") == 2
    status, text = _on_a_terminal(pending, "y", "queue", "drop", "jobs")
    assert status == 0, text
    assert "jobs" not in _queues(pending)
