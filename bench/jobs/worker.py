"""One side's worker process: started with a target, waited for, stopped; its notes read."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.jobs.side import Env, Side, worker_env


@dataclass
class Notes:
    """What the worker's jobs recorded (``bench.jobs.record``)."""

    starts: dict[int, float]
    duplicates: int
    cpu_seconds: float


class Worker:
    def __init__(self, proc: subprocess.Popen[bytes], out: Path, log: Path) -> None:
        self.proc = proc
        self.out = out
        self.log = log

    def _check_alive(self) -> None:
        if self.proc.poll() is not None:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"worker exited with {self.proc.returncode}:\n{tail}")

    async def ready(self, within: float) -> None:
        """Wait until the worker has run its first job."""
        await self._wait_for(self.out.with_suffix(".ready"), within, "its first job")

    async def notes(self, within: float) -> Notes:
        """Wait until the worker has run every job of its target; its notes."""
        await self._wait_for(self.out, within, "all its jobs")
        data = json.loads(await asyncio.to_thread(self.out.read_text))
        starts = {int(n): float(t) for n, t in data["starts"].items()}
        return Notes(starts, int(data["duplicates"]), float(data["cpu_seconds"]))

    async def _wait_for(self, path: Path, within: float, what: str) -> None:
        deadline = time.monotonic() + within
        while not await asyncio.to_thread(path.exists):
            self._check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"the worker did not run {what} within {within:.0f} s")
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        """SIGTERM (each side's graceful stop), SIGKILL if still running after 30 s."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                await asyncio.to_thread(self.proc.wait, 30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                await asyncio.to_thread(self.proc.wait)


@asynccontextmanager
async def started(
    side: Side, env: Env, target: int, folder: Path, argv_prefix: list[str] | None = None
) -> AsyncIterator[Worker]:
    """``side``'s worker process, writing its notes once it has run ``target`` jobs n >= 0."""
    out = folder / f"{side.name}-{time.monotonic_ns()}.json"
    log = out.with_suffix(".log")
    extra = {"BENCH_JOBS_TARGET": str(target), "BENCH_JOBS_OUT": str(out)}
    argv = side.worker_argv(env)
    if argv_prefix:
        argv = [argv[0], *argv_prefix, *argv[1:]]
    proc = _spawn(argv, worker_env({**side.worker_extra_env(env), **extra}), log)
    worker = Worker(proc, out, log)
    try:
        yield worker
    finally:
        await worker.stop()


def _spawn(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """The worker in its own process group (stopped with its children), output to ``log``."""
    with log.open("wb") as log_file:
        return subprocess.Popen(
            argv, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
