"""A private PostgreSQL server for the pgbench scenarios, with its CPU and WAL counters.

The server is started by the scenario itself (durable by default: fsync on, so that
``synchronous_commit`` means what it says), with ``pg_stat_statements`` preloaded for
profiles, tracking top-level statements only as PostgreSQL does by default (a profile sets
``pg_stat_statements.track = all`` in its own session). Its CPU is read from ``/proc``: the
postmaster's own and reaped children's time (``cutime``/``cstime`` hold backends that exited)
plus every live child's, so a pgbench run's backends are counted after they are gone.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgmbus.devdb import DevCluster, find_bindir

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

#: Settings for a benchmark server: room for WAL between the checkpoints the runner asks for,
#: and the profile's extension. Its tracking stays at the default (top-level statements):
#: with ``all``, every statement nested in a function is counted too, which cost the sides
#: made of functions more than raw SQL's single statements (PGMQ's send 7 %, pgmbus's post
#: 2 %, at 4 clients on 2026-11-27) and so skewed the ratios.
SETTINGS = {
    "shared_preload_libraries": "'pg_stat_statements'",
    "pg_stat_statements.track": "top",
    "shared_buffers": "512MB",
    "max_wal_size": "8GB",
    "min_wal_size": "1GB",
    "checkpoint_timeout": "30min",
    "max_connections": "100",
}


@dataclass(frozen=True)
class Counters:
    """The server's cumulative CPU seconds and WAL insert position at one moment."""

    cpu_seconds: float
    wal_lsn: str


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command may contain spaces and parentheses: split after its closing one
    return text[text.rindex(")") + 2 :].split()


def children(ppid: int) -> set[int]:
    """The live child processes of ``ppid`` (a scan of ``/proc``)."""
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and int(fields[1]) == ppid:
                found.add(int(entry.name))
    return found


def tree_cpu_seconds(ppid: int) -> float:
    """CPU seconds of ``ppid``, of its reaped children and of its live children."""
    fields = _stat_fields(ppid)
    if fields is None:
        raise ProcessLookupError(ppid)
    # fields[0] is field 3 (state): utime is field 14, cutime 16 -> indexes 11..14
    ticks = sum(int(x) for x in fields[11:15])
    for pid in children(ppid):
        child = _stat_fields(pid)
        if child is not None:
            ticks += int(child[11]) + int(child[12])
    return ticks / CLOCK_TICKS


class BenchServer:
    """A throw-away server for one benchmark run (or one test module).

    Parameters
    ----------
    durable:
        Keep fsync on (the default); ``False`` trades durability for speed in smoke tests.
    """

    def __init__(self, *, durable: bool = True) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="pgmbus-bench-sql-"))
        self.home.chmod(0o755)  # the server user must enter it when we are root
        self.cluster = DevCluster(self.home, ephemeral=not durable)
        self.bindir = find_bindir()
        self._admin: psycopg.Connection[tuple[object, ...]] | None = None

    def start(self) -> BenchServer:
        self.cluster.init()
        with open(self.cluster.data_dir / "postgresql.conf", "a") as handle:
            handle.write("\n# pgmbus sql benchmarks\n")
            handle.writelines(f"{key} = {value}\n" for key, value in SETTINGS.items())
        self.cluster.start()
        self._admin = psycopg.connect(self.dsn("postgres"), autocommit=True)
        return self

    def stop(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        self.cluster.destroy()
        shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> BenchServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- addresses ------------------------------------------------------------------------------
    def dsn(self, dbname: str) -> str:
        return self.cluster.dsn(dbname)

    def libpq_args(self, dbname: str) -> list[str]:
        """Host, port, user and database as pgbench/psql options."""
        parts = conninfo_to_dict(self.dsn(dbname))
        return [
            "-h",
            str(parts["host"]),
            "-p",
            str(parts["port"]),
            "-U",
            str(parts["user"]),
            "-d",
            dbname,
        ]

    @property
    def postmaster_pid(self) -> int:
        pid = self.cluster.status().pid
        if pid is None:
            raise RuntimeError("the benchmark server is not running")
        return pid

    @property
    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        if self._admin is None:
            raise RuntimeError("the benchmark server is not started")
        return self._admin

    # --- databases ------------------------------------------------------------------------------
    def create_database(self, name: str, template: str | None = None) -> str:
        """(Re)create database ``name``, optionally from ``template``; return its DSN."""
        self.drop_database(name)
        query = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            # FILE_COPY: a template of many small relations copies in a fraction of WAL_LOG's time
            query = sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        self.admin.execute(query)
        return make_conninfo(self.dsn(name))

    def drop_database(self, name: str) -> None:
        self.admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )

    def has_extension(self, name: str) -> bool:
        row = self.admin.execute(
            "SELECT 1 FROM pg_available_extensions WHERE name = %s", (name,)
        ).fetchone()
        return row is not None

    # --- counters -------------------------------------------------------------------------------
    def checkpoint(self) -> None:
        self.admin.execute("CHECKPOINT")

    def counters(self) -> Counters:
        row = self.admin.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
        assert row is not None
        return Counters(tree_cpu_seconds(self.postmaster_pid), str(row[0]))

    def wal_bytes(self, before: Counters, after: Counters) -> int:
        row = self.admin.execute(
            "SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)::bigint",
            (after.wal_lsn, before.wal_lsn),
        ).fetchone()
        assert row is not None
        return int(str(row[0]))

    def settle(self, before: set[int], timeout: float = 3.0) -> None:
        """Wait until the children that appeared since ``before`` exited (and were reaped)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not (children(self.postmaster_pid) - before):
                return
            time.sleep(0.02)
