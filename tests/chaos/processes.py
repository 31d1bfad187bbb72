"""Real subprocesses of the chaos suite (`pgmbus worker`, `pgmbus dispatcher`, `pgmbus serve`),
restarted when one dies; faults reach them by pid: :meth:`Processes.kill_one`,
:meth:`Processes.freeze_one`."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tests.chaos.workloads import Workload

ROOT = Path(__file__).resolve().parents[2]


class Processes(Workload):
    """``count`` processes running :meth:`argv`, each restarted when it exits (after a
    ``kill -9``); stopped with SIGTERM (after a SIGCONT) at the end."""

    program: tuple[str, ...] = ("-m", "pgmbus")  # what the interpreter runs, before argv()

    def __init__(self, workload: str, dsn: str, *, count: int = 2) -> None:
        super().__init__(f"{workload}-processes")
        self.workload, self.dsn, self.count = workload, dsn, count
        self.procs: list[subprocess.Popen[bytes]] = []
        self.started = 0
        self.warnings = 0
        # what the processes print: kept under $CHAOS_LOGS when set, else in a temporary folder
        # removed at the end (after it was scanned for threads that died)
        kept = os.environ.get("CHAOS_LOGS")
        self.keep_logs = bool(kept)
        self.logs = Path(kept) if kept else Path(tempfile.mkdtemp(prefix="pgmbus-chaos-logs-"))
        self.log_files: list[Path] = []
        self._lock = threading.Lock()
        self._rng = random.Random(5)

    def argv(self, index: int) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        """Variables the processes need besides the results database's."""
        return {}

    def _spawn(self, index: int) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
        env["CHAOS_RESULTS_DSN"] = self.dsn
        env["CHAOS_WORKLOAD"] = self.workload
        env.update(self.environment())
        self.started += 1
        argv = [sys.executable, *self.program, *self.argv(index)]
        path = self.logs / f"{self.name}-{os.getpid()}-{id(self)}-{self.started}.log"
        self.log_files.append(path)
        with path.open("ab") as out:
            return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)

    def body(self) -> None:
        with self._lock:
            self.procs = [self._spawn(i) for i in range(self.count)]
        while not self.stop_event.wait(0.2):
            with self._lock:
                for i, proc in enumerate(self.procs):
                    if proc.poll() is not None:
                        self.procs[i] = self._spawn(i)

    def kill_one(self) -> int:
        """SIGKILL a random process (it is restarted); returns 1."""
        with self._lock:
            proc = self._rng.choice(self.procs)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
        return 1

    def freeze_one(self, seconds: float) -> int:
        """SIGSTOP a random process for ``seconds`` (longer than its lease), then SIGCONT."""
        with self._lock:
            proc = self._rng.choice(self.procs)
        proc.send_signal(signal.SIGSTOP)
        time.sleep(seconds)
        proc.send_signal(signal.SIGCONT)
        return 1

    def stop(self, timeout: float = 30.0) -> None:
        super().stop(timeout)
        with self._lock:
            for proc in self.procs:
                proc.send_signal(signal.SIGCONT)
                proc.send_signal(signal.SIGTERM)
            for proc in self.procs:
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
                    self.crashed = self.crashed or f"process {proc.pid} ignored SIGTERM"
        self._scan_logs()

    def _scan_logs(self) -> None:
        """Threads that died silently (Python's 'Exception in thread') make the workload
        fail; ``warnings`` counts the lines the processes logged at WARNING or above."""
        self.warnings = 0
        for path in self.log_files:
            text = path.read_text(errors="replace") if path.exists() else ""
            self.warnings += sum(
                1
                for line in text.splitlines()
                if " WARNING " in line
                or " ERROR " in line
                or '"level": "WARNING"' in line
                or '"level": "ERROR"' in line
            )
            if "Exception in thread" in text:
                at = text.index("Exception in thread")
                self.crashed = (
                    self.crashed or f"a thread died in {path.name}: {text[at : at + 500]}"
                )
        if not self.keep_logs:
            shutil.rmtree(self.logs, ignore_errors=True)


class WorkerProcesses(Processes):
    """`pgmbus worker tests.chaos.handlers:record --queue Q` (2 slots, 3 s lease)."""

    def __init__(self, workload: str, dsn: str, queue: str, *, count: int = 2) -> None:
        super().__init__(workload, dsn, count=count)
        self.queue = queue

    def argv(self, index: int) -> list[str]:
        return [
            "worker",
            "tests.chaos.handlers:record",
            "--queue",
            self.queue,
            "--dsn",
            self.dsn,
            "--lease",
            "3",
            "--poll",
            "0.5",
            "--backoff",
            "0.05",
            "--max-attempts",
            "1000",
            "--concurrency",
            "2",
        ]


class AppProcesses(Processes):
    """`pgmbus worker tests.chaos.app:app`: a queue handler, a stream handler and a slotted
    stream handler (both slots) in each process."""

    def argv(self, index: int) -> list[str]:
        return ["worker", "tests.chaos.app:app", "--dsn", self.dsn, "--grace", "5"]


class DispatcherProcesses(Processes):
    """`pgmbus dispatcher` (2 s bucket lease) calling the local receiver."""

    def argv(self, index: int) -> list[str]:
        return [
            "dispatcher",
            "--dsn",
            self.dsn,
            "--allow-network",
            "127.0.0.1/32",
            "--concurrency",
            "8",
            "--timeout",
            "2",
            "--bucket-lease",
            "2",
            "--claim-slack",
            "1",
        ]


class ServeProcess(Processes):
    """One `pgmbus serve` on ``port``, with its embedded dispatcher (2 s bucket lease) calling
    127.0.0.1; it must never need a restart."""

    def __init__(self, workload: str, dsn: str, port: int) -> None:
        super().__init__(workload, dsn, count=1)
        self.port = port

    def argv(self, index: int) -> list[str]:
        return [
            "serve",
            "--dsn",
            self.dsn,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--allow-network",
            "127.0.0.1/32",
            "--concurrency",
            "8",
            "--timeout",
            "2",
            "--bucket-lease",
            "2",
            "--claim-slack",
            "1",
        ]
