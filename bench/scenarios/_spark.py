"""What the Spark scenarios share: one local session with the JDBC driver, JDBC URLs, CPU split."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from psycopg.conninfo import conninfo_to_dict

from bench.harness import Measurement

JDBC_JAR = Path("/usr/share/java/postgresql.jar")


def ensure_jdbc_jar() -> Path:
    """The PostgreSQL JDBC driver (Debian's libpostgresql-jdbc-java), installed if missing."""
    if not JDBC_JAR.exists() and shutil.which("apt-get"):
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "libpostgresql-jdbc-java"],
            check=True,
            capture_output=True,
            env={"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        )
    if not JDBC_JAR.exists():
        raise SystemExit(
            f"the JDBC baseline needs {JDBC_JAR}: apt-get install libpostgresql-jdbc-java"
        )
    return JDBC_JAR


@cache
def session() -> Any:
    """One local[2] session for every round (JIT warm, as a long-running job would be)."""
    from pgmbus.spark.session import local_session

    spark = local_session("pgmbus-bench", conf={"spark.jars": str(ensure_jdbc_jar())})
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def jdbc(dsn: str) -> tuple[str, dict[str, str]]:
    """The JDBC URL and connection properties of a libpq DSN."""
    params = conninfo_to_dict(dsn)
    host = str(params.get("host") or "127.0.0.1")
    if host.startswith("/"):
        host = "127.0.0.1"
    url = f"jdbc:postgresql://{host}:{params.get('port') or 5432}/{params.get('dbname')}"
    props = {"driver": "org.postgresql.Driver", "user": str(params.get("user") or "postgres")}
    if params.get("password"):
        props["password"] = str(params["password"])
    return url, props


#: Untimed runs of each side before the measured rounds: the JVM compiles the hot paths of
#: both readers (the Arrow and the JDBC conversion) over several runs, not one.
WARMUP_RUNS = 5


def _proc_times() -> dict[int, tuple[int, str, int, int]]:
    """pid -> (ppid, command line, own user+system ticks, reaped children's ticks)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, UnicodeDecodeError):
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
        out[int(entry)] = (int(fields[1]), cmd, utime + stime, cutime + cstime)
    return out


def cpu_seconds(postmaster: int) -> dict[str, float]:
    """CPU seconds used so far by the database server (postmaster ``postmaster`` and its
    backends), this process's JVM, and that JVM's Python workers (Linux ``/proc``; empty
    elsewhere). Differences of two calls give each part's share of a run."""
    if not Path("/proc/self/stat").exists():
        return {}
    procs = _proc_times()
    me = os.getpid()
    jvms = {p for p, (ppid, cmd, _, _) in procs.items() if ppid == me and "java" in cmd}
    daemons = {p for p, (ppid, cmd, _, _) in procs.items() if ppid in jvms and "pyspark" in cmd}
    parts = {"pg": 0, "jvm": 0, "pyworker": 0}
    for pid, (ppid, _cmd, own, reaped) in procs.items():
        if pid == postmaster:
            parts["pg"] += reaped
        elif ppid == postmaster:
            parts["pg"] += own
        elif pid in jvms:
            parts["jvm"] += own  # its Python daemon's time is counted below, not reaped here
        elif pid in daemons:
            parts["pyworker"] += own + reaped  # a worker's time moves here when it exits
        elif ppid in daemons:
            parts["pyworker"] += own
    tick = os.sysconf("SC_CLK_TCK")
    return {k: v / tick for k, v in parts.items()}


def postmaster_pid(dsn: str) -> int:
    """The pid of the server's postmaster (the parent of this connection's backend)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        # read while the backend lives: once the connection closes, its /proc entry goes
        try:
            fields = Path(f"/proc/{row[0]}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return -1  # a remote server: its CPU is not counted
    return int(fields[1])


def timed_with_cpu(dsn: str, units: int, run: Callable[[], None]) -> Measurement:
    """Time ``run`` and add each part's CPU seconds per million units to ``extra`` (where the
    time goes: server, JVM, Python workers)."""
    postmaster = postmaster_pid(dsn)
    before = cpu_seconds(postmaster)
    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    after = cpu_seconds(postmaster)
    scale = 1_000_000 / units
    extra = {f"cpu_{k}_s_per_M": round((after[k] - before[k]) * scale, 3) for k in after}
    return Measurement(units, seconds, extra)
