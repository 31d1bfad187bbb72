"""Subprocesses that tests start: wait on what they do, stop them, and always reap them.

A loaded machine (2 cores, load 7) can take tens of seconds to start a Python process or let it
exit, so the deadlines here are generous: they only bound a test that is already failing. A
process is always killed and waited for on the way out, even when its test fails, so no
``ResourceWarning: subprocess ... is still running`` surfaces later in an unrelated test
(pytest turns warnings into errors).
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

# how long a test waits for a subprocess to show something or to exit, at most
PROCESS_DEADLINE_S = 90.0


def wait_until(
    check: Callable[[], bool],
    timeout: float = PROCESS_DEADLINE_S,
    *,
    proc: subprocess.Popen[Any] | None = None,
    what: str = "condition",
) -> None:
    """Poll ``check`` until it is true; fail after ``timeout`` s, or at once when ``proc`` exits."""
    deadline = time.monotonic() + timeout
    while not check():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: the process exited with {proc.returncode} first")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached in {timeout:.0f} s")
        time.sleep(0.05)


def reap(proc: subprocess.Popen[Any]) -> None:
    """Kill ``proc`` if it still runs, wait for it and close its pipes."""
    if proc.poll() is None:
        proc.kill()
    proc.communicate()


def stop(
    proc: subprocess.Popen[Any],
    sig: int | None = signal.SIGTERM,
    timeout: float = PROCESS_DEADLINE_S,
) -> subprocess.CompletedProcess[Any]:
    """Send ``sig`` (None: none, it exits by itself) and wait for the process to exit, reading
    its pipes (when it has any); one still running after ``timeout`` s is killed and reaped,
    and the test fails."""
    if sig is not None and proc.poll() is None:
        proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        reap(proc)
        raise AssertionError(
            f"process {proc.pid} still ran {timeout:.0f} s after "
            f"{signal.Signals(sig).name if sig is not None else 'its work'}"
        ) from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
