"""The first connection of a command answers within 5 s of the command's start.

libpq's ``connect_timeout`` counts from the connection attempt, once per address tried, and
starting Python and importing the command tree takes a second or two before that: a 4 s
timeout alone answers after about 6 s. Here the attempt gets what is left of 5 s since the
process started, and a thread bounds it whatever libpq does per address.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

COMMAND_BUDGET_S = 5.0
"""Seconds from the command's start to its answer when the server does not answer."""

EXIT_MARGIN_S = 1.0
"""Kept for printing the error and leaving the interpreter."""

_IMPORTED = time.monotonic()


def process_age() -> float:
    """Seconds since this process started (Linux's /proc; else since this module's import)."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])  # field 22, starttime, in clock ticks since boot
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED


MIN_ATTEMPT_S = 2.0
"""The shortest attempt, libpq's own floor for ``connect_timeout``: a start slowed down by a
loaded machine still gets a real attempt (and then answers after the 5 s)."""


def remaining() -> float:
    """Seconds left for connecting, at least ``MIN_ATTEMPT_S``."""
    return max(MIN_ATTEMPT_S, COMMAND_BUDGET_S - process_age() - EXIT_MARGIN_S)


def connect_within(conninfo: str, seconds: float) -> psycopg.Connection[Any]:
    """``psycopg.connect`` (autocommit) that raises ``OperationalError`` after ``seconds``.

    The attempt runs in a daemon thread: when it is given up, the command ends with the error
    and the thread with the process.
    """
    outcome: list[psycopg.Connection[Any] | BaseException] = []

    def attempt() -> None:
        try:
            outcome.append(psycopg.connect(conninfo, autocommit=True))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append(exc)

    thread = threading.Thread(target=attempt, daemon=True, name="pgmbus-connect")
    thread.start()
    thread.join(seconds)
    if not outcome:
        raise psycopg.OperationalError(
            f"connection timeout expired: no answer from the server within "
            f"{COMMAND_BUDGET_S:.0f} s of the command's start"
        )
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result
