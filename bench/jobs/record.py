"""What every side's no-op job does: note when job ``n`` started, in the worker process.

The driver reads the notes from files, so that it measures the same thing on every side
without asking any broker: the worker writes ``<out>.ready`` at its first job, and ``<out>``
(JSON) once it has seen ``BENCH_JOBS_TARGET`` distinct jobs ``n >= 0``. The notes: each
job's start on the system-wide monotonic clock, and the process's CPU time from the first job
to the last.
A job delivered twice keeps its first start and is counted once (``duplicates`` says how often).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

_lock = threading.Lock()
_starts: dict[int, float] = {}
_duplicates = 0
_counted = 0  # jobs n >= 0; negative n are the driver's probes (warm-up, rolled back)
_cpu_first = 0.0
_written = False


def job(n: int) -> None:
    """The job's whole body: record that job ``n`` started."""
    global _duplicates, _counted, _cpu_first, _written
    now = time.monotonic()
    with _lock:
        if n in _starts:
            _duplicates += 1
            return
        _starts[n] = now
        _counted += n >= 0
        if len(_starts) == 1:
            _cpu_first = time.process_time()
            _out().with_suffix(".ready").write_text("")
        if _written or _counted < int(os.environ["BENCH_JOBS_TARGET"]):
            return
        _written = True
        notes = {
            "starts": _starts,
            "duplicates": _duplicates,
            "cpu_seconds": time.process_time() - _cpu_first,
        }
    tmp = _out().with_suffix(".tmp")
    tmp.write_text(json.dumps(notes))
    tmp.rename(_out())  # the driver never reads a half-written file


def _out() -> Path:
    return Path(os.environ["BENCH_JOBS_OUT"])
