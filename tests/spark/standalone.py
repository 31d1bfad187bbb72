"""A Spark standalone cluster on 127.0.0.1 from the pyspark package: a master, N workers.

Each process is ``bin/spark-class`` of the installed pyspark (which ``exec``s the JVM, so the
pid we keep is the JVM's), and each is stopped by that pid (SIGTERM, then SIGKILL), workers
first; executors the workers started are stopped by pid too if they outlive their worker.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"spark process exited ({proc.returncode}): {tail}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout}s: {log}")


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rfind(")") + 2 :].split()[1]) == pid:
            out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of ours counts as gone
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def stop_pid(pid: int, proc: subprocess.Popen[bytes] | None = None, grace: float = 10) -> None:
    """SIGTERM ``pid``, wait up to ``grace`` seconds, then SIGKILL; reap it when it is ours."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if not _alive(pid):
            break
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and _alive(pid):
            if proc is not None and proc.poll() is not None:
                break
            time.sleep(0.1)
    if proc is not None:
        with suppress(subprocess.TimeoutExpired):
            proc.wait(5)


@dataclass
class Cluster:
    """A running standalone cluster: its master URL and the pids it started."""

    url: str
    master: subprocess.Popen[bytes]
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def pids(self) -> list[int]:
        return [self.master.pid, *(w.pid for w in self.workers)]

    def executors(self) -> list[int]:
        """Pids of the executor JVMs the workers run now."""
        return [c for w in self.workers for c in _children(w.pid)]


def environment(extra_pythonpath: list[str]) -> dict[str, str]:
    """The environment of the cluster's processes: this interpreter for Python workers, and
    the given folders on PYTHONPATH (so executors import this checkout's pgmbus)."""
    env = dict(os.environ)
    env["SPARK_HOME"] = str(SPARK_HOME)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    path = [*extra_pythonpath, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(path)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("SPARK_CONF_DIR", None)
    return env


@contextmanager
def standalone_cluster(
    workdir: Path,
    *,
    workers: int = 2,
    cores: int = 1,
    memory: str = "1g",
    pythonpath: list[str] | None = None,
    timeout: float = 90,
) -> Iterator[Cluster]:
    """Start a master and ``workers`` workers bound to 127.0.0.1; stop them all by pid."""
    env = environment(pythonpath or [])
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port = free_port()
    procs: list[subprocess.Popen[bytes]] = []
    executors: set[int] = set()
    cluster = None
    try:
        log = workdir / "master.log"
        master = _start(
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(free_port()),
            ],
            env,
            log,
            workdir,
        )
        procs.append(master)
        _wait_port(port, master, log, timeout)
        url = f"spark://127.0.0.1:{port}"
        cluster = Cluster(url, master)
        for i in range(workers):
            wdir = workdir / f"worker{i}"
            wdir.mkdir()
            wlog = workdir / f"worker{i}.log"
            wport = free_port()
            worker = _start(
                [
                    spark_class,
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(wport),
                    "--webui-port",
                    str(free_port()),
                    "--cores",
                    str(cores),
                    "--memory",
                    memory,
                    "--work-dir",
                    str(wdir),
                    url,
                ],
                env,
                wlog,
                workdir,
            )
            procs.append(worker)
            cluster.workers.append(worker)
            _wait_port(wport, worker, wlog, timeout)
        _wait_registered(workdir / "master.log", workers, timeout)
        yield cluster
    finally:
        if cluster is not None:
            executors.update(cluster.executors())
        for proc in reversed(procs):  # workers first, then the master
            stop_pid(proc.pid, proc)
        for pid in executors:  # executors outliving their worker (normally none)
            stop_pid(pid)


def _start(
    command: list[str], env: dict[str, str], log: Path, cwd: Path
) -> subprocess.Popen[bytes]:
    """Start a daemon JVM (short-run options: no C2 compiler, serial GC, 512 MB heap)."""
    daemon = {
        **env,
        "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        "SPARK_DAEMON_MEMORY": "512m",
    }
    with log.open("wb") as out:
        return subprocess.Popen(command, env=daemon, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)


def _wait_registered(master_log: Path, workers: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if master_log.read_text(errors="replace").count("Registering worker") >= workers:
            return
        time.sleep(0.2)
    raise TimeoutError(f"{workers} workers did not register: {master_log}")
