"""The chaos suite's cluster: a durable embedded server behind a chaos proxy, and its faults."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgmbus import schema
from pgmbus.devdb import DevCluster
from pgmbus.testing.chaos import ChaosProxy

log = logging.getLogger("pgmbus.chaos")

RESULTS_DDL = """
CREATE TABLE chaos_results (
    id bigserial PRIMARY KEY,
    workload text NOT NULL,
    value text NOT NULL,
    message text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
)
"""


class ChaosCluster:
    """A durable cluster in a folder of its own, a proxy in front, fresh databases on demand.

    The cluster is durable (fsync and synchronous commit on): an acknowledged commit must
    survive a ``kill -9`` of the postmaster, which is what the checker tests.
    """

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="pgmbus-chaos-"))
        self.folder.chmod(0o755)  # the server user must enter it when we are root
        self.cluster = DevCluster(self.folder / "cluster")
        self.proxy: ChaosProxy | None = None
        self.template = f"chaos_tpl_{uuid.uuid4().hex[:8]}"
        self.kills = 0

    def start(self) -> ChaosCluster:
        status = self.cluster.start()
        assert status.port is not None
        self.proxy = ChaosProxy(status.port, seed=int(os.environ.get("CHAOS_SEED", "7"))).start()
        with psycopg.connect(self.cluster.dsn("postgres"), autocommit=True) as conn:
            # After a crash the startup process syncs the data folder before recovery; one
            # fsync per file took 2-10 s here, one syncfs takes milliseconds.
            conn.execute("ALTER SYSTEM SET recovery_init_sync_method = 'syncfs'")
            conn.execute("SELECT pg_reload_conf()")
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.template)))
        with psycopg.connect(self.cluster.dsn(self.template), autocommit=True) as conn:
            schema.install(conn)
            conn.execute(RESULTS_DDL)
        return self

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
        self.cluster.destroy()
        shutil.rmtree(self.folder, ignore_errors=True)

    def new_database(self) -> str:
        """A fresh database with the schema and the results table; returns its direct DSN."""
        name = f"chaos_{uuid.uuid4().hex[:10]}"
        query = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(self.template)
        )
        with psycopg.connect(self.cluster.dsn("postgres"), autocommit=True) as conn:
            conn.execute(query)
            # The copy of the template is in the WAL: without a checkpoint, every crash of the
            # scenario replays it (13 s measured under load) instead of only the run's writes.
            conn.execute("CHECKPOINT")
        return self.cluster.dsn(name)

    def drop_database(self, dsn: str) -> None:
        """Drop a scenario's database (fewer files to sync after the next crash)."""
        name = conninfo_to_dict(dsn)["dbname"]
        query = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(str(name)))
        with psycopg.connect(self.cluster.dsn("postgres"), autocommit=True) as conn:
            conn.execute(query)

    def via_proxy(self, dsn: str, **options: str) -> str:
        """``dsn`` through the proxy (with short connect timeouts, and server options)."""
        assert self.proxy is not None
        extra: dict[str, str] = {"connect_timeout": "3"}
        if options:
            extra["options"] = " ".join(f"-c {k}={v}" for k, v in options.items())
        return make_conninfo(self.proxy.dsn(dsn), **extra)

    def heal(self) -> None:
        """No more faults: rates to zero, traffic flowing, server up."""
        assert self.proxy is not None
        self.proxy.settings.random_cut = 0.0
        self.proxy.settings.ambiguous_commit = 0.0
        self.proxy.settings.ambiguous_statement = 0.0
        self.proxy.settings.refuse = False
        self.proxy.resume()
        if not self.cluster.status().running:
            self.cluster.start(port_wait=30)

    def kill9_and_restart(self, down: float = 0.5) -> None:
        """``kill -9`` the postmaster, stay down ``down`` seconds, start again (same port)."""
        pid = self.cluster.status().pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        self.kills += 1
        time.sleep(down)
        before = self.cluster.port
        self.cluster.start(port_wait=30)
        assert self.cluster.port == before, "the server came back on its port"


class Periodic(threading.Thread):
    """Run ``action`` every ``every`` seconds until stopped; count the runs; log failures."""

    def __init__(self, name: str, every: float, action: Callable[[], object]) -> None:
        super().__init__(name=name, daemon=True)
        self.every = every
        self.action = action
        self.stop_event = threading.Event()
        self.count = 0
        self.hits = 0  # what the action says it hit (e.g. backends terminated)
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.stop_event.wait(self.every):
            try:
                hit = self.action()
                self.count += 1
                self.hits += hit if isinstance(hit, int) else 1
            except Exception as exc:
                log.warning("fault %s failed: %s", self.name, exc)
                self.errors.append(f"{type(exc).__name__}: {exc}")

    def stop(self) -> int:
        """Stop and return the hits."""
        self.stop_event.set()
        self.join(60)
        return self.hits
