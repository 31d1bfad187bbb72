"""A primary with a standby on this machine, managed by pg_auto_failover.

``HACluster`` runs a pg_auto_failover monitor and two data nodes (``node1``, ``node2``) under one
folder, each on a free port of 127.0.0.1, trusting local connections: a development and test
setup, never a production one. The standby is synchronous by default (``synchronous=False``
makes it asynchronous, to show what that loses). Clients use :meth:`HACluster.dsn`, a multi-host
DSN with ``target_session_attrs=read-write`` that reaches whichever node is primary.

Every ``pg_autoctl`` process runs as the server user (``runuser`` when this process is root, as
:mod:`pgmbus.devdb` does) with its configuration, state and pid files under the folder, so two
clusters never share anything. ``fast=True`` shortens pg_auto_failover's failure detection and
demotion timeouts (:data:`FAST_MONITOR_SETTINGS`, :data:`FAST_KEEPER_SETTINGS`) for the tests.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

from pgmbus.devdb import DevCluster, find_bindir, free_port
from pgmbus.errors import DevDBError

DEFAULT_DATABASE = "pgmbus"
NODE_NAMES = ("node1", "node2")

# The monitor's defaults detect a dead node in about 20 s and then wait 30 s for the old primary
# to demote itself before promoting the standby (about 50 s in all, measured). These values make
# it a few seconds; docs/ha.md lists them.
FAST_MONITOR_SETTINGS = {
    "pgautofailover.health_check_period": "1000",
    "pgautofailover.health_check_timeout": "1000",
    "pgautofailover.health_check_max_retries": "1",
    "pgautofailover.health_check_retry_delay": "500",
    "pgautofailover.node_considered_unhealthy_timeout": "2000",
    "pgautofailover.primary_demote_timeout": "4000",
}
# A primary cut off from the monitor and the standby demotes itself after this many seconds; it
# must stay below the monitor's primary_demote_timeout, so that two primaries never accept writes.
FAST_KEEPER_SETTINGS = {"timeout.network_partition_timeout": "2"}


@dataclass(frozen=True)
class NodeState:
    """One data node as the monitor sees it."""

    name: str
    port: int
    reported: str
    assigned: str
    healthy: bool


class HACluster:
    """A pg_auto_failover monitor and two data nodes under ``home``.

    Parameters
    ----------
    home:
        The folder of the whole setup (created; the server user must be able to enter it).
    synchronous:
        Whether the standby takes part in the write quorum (``synchronous_standby_names`` set
        by pg_auto_failover) or replicates asynchronously.
    fast:
        Use :data:`FAST_MONITOR_SETTINGS` and :data:`FAST_KEEPER_SETTINGS` (tests, demos).
    ephemeral:
        ``fsync=off`` on the nodes: a kill -9 keeps the page cache, a machine crash does not.
    """

    def __init__(
        self,
        home: Path | str,
        *,
        synchronous: bool = True,
        fast: bool = False,
        ephemeral: bool = False,
    ) -> None:
        self.home = Path(home).resolve()
        self.synchronous = synchronous
        self.fast = fast
        self.ephemeral = ephemeral
        # DevCluster knows which user runs servers when we are root; it owns nothing here
        self._identity = DevCluster(self.home / "identity")
        self._keepers: dict[str, subprocess.Popen[bytes]] = {}

    # --- layout ---------------------------------------------------------------------------------
    def pgdata(self, name: str) -> Path:
        return self.home / name

    def _port_file(self, name: str) -> Path:
        return self.home / f"{name}.port"

    def port(self, name: str) -> int:
        try:
            return int(self._port_file(name).read_text().strip())
        except (OSError, ValueError):
            raise DevDBError(f"no HA cluster at {self.home}; run `pgmbus dev start --ha`") from None

    @property
    def initialized(self) -> bool:
        return all((self.pgdata(n) / "PG_VERSION").is_file() for n in ("monitor", *NODE_NAMES))

    def dsn(self, dbname: str = DEFAULT_DATABASE) -> str:
        """The multi-host DSN that follows the primary."""
        hosts = ",".join("127.0.0.1" for _ in NODE_NAMES)
        ports = ",".join(str(self.port(n)) for n in NODE_NAMES)
        return (
            f"host={hosts} port={ports} user=postgres dbname={dbname} "
            "target_session_attrs=read-write connect_timeout=2"
        )

    def node_dsn(self, name: str, dbname: str = DEFAULT_DATABASE) -> str:
        """The DSN of one node (a standby's, for reads)."""
        return f"host=127.0.0.1 port={self.port(name)} user=postgres dbname={dbname}"

    def monitor_dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port('monitor')} user=postgres dbname=pg_auto_failover"

    # --- running pg_autoctl ---------------------------------------------------------------------
    def _env(self) -> list[str]:
        return [
            "env",
            f"XDG_CONFIG_HOME={self.home / 'config'}",
            f"XDG_DATA_HOME={self.home / 'share'}",
            f"XDG_RUNTIME_DIR={self.home / 'run'}",
            # pg_autoctl puts the servers' unix sockets here (instead of /var/run/postgresql)
            f"PG_REGRESS_SOCK_DIR={self.home / 'run'}",
            f"PGHOST={self.home / 'run'}",
            f"PATH={find_bindir()}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        ]

    def _argv(self, args: Sequence[str]) -> list[str]:
        autoctl = shutil.which("pg_autoctl")
        if autoctl is None:
            raise DevDBError(
                "pg_autoctl not found; install Debian's postgresql-15-auto-failover "
                "(scripts/bootstrap.sh does)"
            )
        argv = [*self._env(), autoctl, *args]
        if self._identity.as_root:
            return ["runuser", "-u", self._identity.server_user, "--", *argv]
        return argv

    def autoctl(self, *args: str, check: bool = True) -> str:
        """Run one ``pg_autoctl`` command; return its standard output."""
        proc = subprocess.run(
            self._argv(args), capture_output=True, text=True, cwd=str(self.home), timeout=120
        )
        if check and proc.returncode != 0:
            raise DevDBError(
                f"pg_autoctl {' '.join(args[:2])} failed (exit {proc.returncode}): "
                f"{(proc.stderr or proc.stdout).strip()[-2000:]}"
            )
        return proc.stdout

    def _run_keeper(self, name: str) -> None:
        """Start ``pg_autoctl run`` for a node, detached, logging to ``<name>.log``."""
        with open(self.home / f"{name}.log", "ab") as log:
            self._keepers[name] = subprocess.Popen(
                self._argv(["run", "--pgdata", str(self.pgdata(name))]),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=str(self.home),
                start_new_session=True,  # its own process group: kill_node kills all of it
            )

    # --- life cycle -----------------------------------------------------------------------------
    def start(self, timeout: float = 180.0) -> None:
        """Create the monitor and the nodes on first use, then run them; wait for a primary
        and a streaming standby."""
        deadline = time.monotonic() + timeout
        if not self.initialized:
            self._create(deadline)
        else:
            for name in ("monitor", *NODE_NAMES):
                if self._keeper_pid(name) is None:
                    self._run_keeper(name)
        self.wait_for_primary(timeout=max(1.0, deadline - time.monotonic()))
        self.wait_for_standby(timeout=max(1.0, deadline - time.monotonic()))

    def _prepare_home(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.home.chmod(0o755)
        for sub in ("config", "share", "run"):
            (self.home / sub).mkdir(exist_ok=True)
        if self._identity.as_root:
            user = self._identity.server_user
            probe = subprocess.run(
                ["runuser", "-u", user, "--", "test", "-x", str(self.home)], capture_output=True
            )
            if probe.returncode != 0:
                raise DevDBError(
                    f"the server user {user!r} cannot enter {self.home}; "
                    "set PGMBUS_HOME to a folder whose parents it can traverse"
                )
            for path in (self.home, *(self.home / s for s in ("config", "share", "run"))):
                shutil.chown(path, user=user)

    def _create(self, deadline: float) -> None:
        self._prepare_home()
        pg_ctl = str(find_bindir() / "pg_ctl")
        common = ["--pgctl", pg_ctl, "--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl"]
        if not (self.pgdata("monitor") / "PG_VERSION").is_file():
            port = free_port()
            self._port_file("monitor").write_text(str(port))
            monitor = str(self.pgdata("monitor"))
            self._initdb("monitor", NODE_NAMES[0])
            self.autoctl("create", "monitor", "--pgdata", monitor, "--pgport", str(port), *common)
            if self.fast:
                self._append_conf("monitor", FAST_MONITOR_SETTINGS)
        if self._keeper_pid("monitor") is None:
            self._run_keeper("monitor")
        self._wait_monitor(deadline)
        monitor_uri = (
            f"postgres://autoctl_node@127.0.0.1:{self.port('monitor')}/pg_auto_failover"
            "?sslmode=disable"
        )
        for index, name in enumerate(NODE_NAMES):
            port = free_port()
            self._port_file(name).write_text(str(port))
            args = ["create", "postgres", "--pgdata", str(self.pgdata(name))]
            args += ["--pgport", str(port), "--listen", "127.0.0.1", "--name", name]
            args += ["--dbname", DEFAULT_DATABASE, "--monitor", monitor_uri, *common]
            if index > 0 and not self.synchronous:
                args += ["--replication-quorum", "false"]
            self.autoctl(*args)
            self._tune_node(name)
            self._run_keeper(name)
            if index == 0:
                self.wait_for_primary(timeout=max(1.0, deadline - time.monotonic()))

    def _initdb(self, *names: str) -> None:
        """For an ephemeral cluster, create the data folders at once and without syncing them
        (pg_autoctl then adopts them; its own initdb syncs every file, seconds when busy)."""
        if not self.ephemeral:
            return
        running = []
        for name in names:
            argv = [str(find_bindir() / "initdb"), "-D", str(self.pgdata(name))]
            argv += ["-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"]
            if self._identity.as_root:
                argv = ["runuser", "-u", self._identity.server_user, "--", *argv]
            running.append(
                subprocess.Popen(
                    argv,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    cwd=str(self.home),
                )
            )
        for proc in running:
            out, _ = proc.communicate(timeout=120)
            if proc.returncode != 0:
                raise DevDBError(f"initdb failed: {out.strip()}")

    def _append_conf(self, name: str, settings: dict[str, str]) -> None:
        text = "".join(f"{key} = '{value}'\n" for key, value in settings.items())
        with open(self.pgdata(name) / "postgresql.conf", "a") as handle:
            handle.write("\n# pgmbus HA cluster\n" + text)

    def _tune_node(self, name: str) -> None:
        settings = {"max_connections": "200"}
        if self.ephemeral:
            settings["fsync"] = "off"
        self._append_conf(name, settings)
        if self.fast:
            for key, value in FAST_KEEPER_SETTINGS.items():
                self.autoctl("config", "set", "--pgdata", str(self.pgdata(name)), key, value)

    def _wait_monitor(self, deadline: float) -> None:
        while True:
            with (
                contextlib.suppress(psycopg.Error),
                psycopg.connect(self.monitor_dsn(), connect_timeout=2) as conn,
            ):
                conn.execute("SELECT 1 FROM pgautofailover.formation")
                return
            if time.monotonic() > deadline:
                raise DevDBError(f"the monitor did not start; see {self.home / 'monitor.log'}")
            time.sleep(0.2)

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the nodes, then the monitor (fast shutdown of each server)."""
        for name in (*NODE_NAMES, "monitor"):
            if self._keeper_pid(name) is not None:
                self.autoctl("stop", "--pgdata", str(self.pgdata(name)), check=False)
        deadline = time.monotonic() + timeout
        for name in (*NODE_NAMES, "monitor"):
            while self._keeper_pid(name) is not None and time.monotonic() < deadline:
                time.sleep(0.1)
            if self._keeper_pid(name) is not None:
                self.kill_node(name)
        for proc in self._keepers.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        self._keepers.clear()

    def destroy(self) -> None:
        """Stop everything and delete the folder."""
        with contextlib.suppress(DevDBError):
            self.stop()
        shutil.rmtree(self.home, ignore_errors=True)

    # --- faults ---------------------------------------------------------------------------------
    def _keeper_pid(self, name: str) -> int | None:
        """The pid of the node's ``pg_autoctl run`` (from its pid file), when it is alive."""
        pgdata = str(self.pgdata(name)).lstrip("/")
        pid_file = self.home / "run" / "pg_autoctl" / pgdata / "pg_autoctl.pid"
        try:
            first = pid_file.read_text().splitlines()[0]
        except (OSError, IndexError):
            return None
        pid = int(first) if first.strip().isdigit() else -1
        if pid <= 0:
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return pid
        return pid

    def _postmaster_pid(self, name: str) -> int | None:
        try:
            first = (self.pgdata(name) / "postmaster.pid").read_text().splitlines()[0]
        except (OSError, IndexError):
            return None
        return int(first) if first.strip().isdigit() else None

    def kill_node(self, name: str) -> None:
        """``kill -9`` a node's postmaster and its pg_autoctl (the whole machine gone): without
        the keeper nobody restarts the server, so the monitor fails over."""
        keeper = self._keeper_pid(name)
        postmaster = self._postmaster_pid(name)
        for pid in (keeper, postmaster):
            if pid is None:
                continue
            with contextlib.suppress(ProcessLookupError):
                group = os.getpgid(pid)
                # the keeper runs in a session of its own (_run_keeper): its group is the node;
                # never this process's own group, should a pid file name a stranger
                if group != os.getpgrp():
                    os.killpg(group, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc = self._keepers.pop(name, None)
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def kill_postmaster(self, name: str) -> None:
        """``kill -9`` a node's postmaster only: its keeper lives on, sees the server down and
        starts it again (crash recovery), reporting to the monitor meanwhile."""
        postmaster = self._postmaster_pid(name)
        if postmaster is None:
            raise DevDBError(f"{name} has no running postmaster")
        with contextlib.suppress(ProcessLookupError):
            os.kill(postmaster, signal.SIGKILL)

    def restart_node(self, name: str) -> None:
        """Run a killed node's keeper again: it rejoins as a standby (pg_rewind if need be)."""
        if self._keeper_pid(name) is None:
            self._run_keeper(name)

    # --- state ----------------------------------------------------------------------------------
    def nodes(self) -> list[NodeState]:
        """The data nodes as the monitor sees them."""
        with psycopg.connect(self.monitor_dsn(), connect_timeout=2) as conn:
            rows = conn.execute(
                "SELECT nodename, nodeport, reportedstate::text, goalstate::text,"
                " health = 1 FROM pgautofailover.node ORDER BY nodeid"
            ).fetchall()
        return [NodeState(str(r[0]), int(r[1]), str(r[2]), str(r[3]), bool(r[4])) for r in rows]

    def primary(self) -> str | None:
        """The name of the node that accepts writes now, asked of the nodes themselves."""
        for name in NODE_NAMES:
            with (
                contextlib.suppress(psycopg.Error, DevDBError),
                psycopg.connect(self.node_dsn(name, "postgres"), connect_timeout=2) as conn,
            ):
                # a promoted standby stays read-only (default_transaction_read_only) until the
                # old primary is known to be demoted: only then does it take writes
                row = conn.execute(
                    "SELECT NOT pg_is_in_recovery()"
                    " AND current_setting('transaction_read_only') = 'off'"
                ).fetchone()
                if row is not None and row[0] is True:
                    return name
        return None

    def wait_for_primary(self, *, other_than: str | None = None, timeout: float = 60.0) -> str:
        """Wait until a node (not ``other_than``) accepts writes; return its name."""
        deadline = time.monotonic() + timeout
        while True:
            name = self.primary()
            if name is not None and name != other_than:
                return name
            if time.monotonic() > deadline:
                raise DevDBError(f"no new primary after {timeout:.0f} s; see {self.home}/*.log")
            time.sleep(0.1)

    def wait_for_standby(self, timeout: float = 120.0) -> str:
        """Wait until the monitor sees one node as primary and the other as a healthy
        secondary (streaming, and in the quorum when synchronous); return the standby's name."""
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(psycopg.Error):
                states = self.nodes()
                if sorted((s.reported, s.assigned) for s in states) == [
                    ("primary", "primary"),
                    ("secondary", "secondary"),
                ]:
                    return next(s.name for s in states if s.reported == "secondary")
            if time.monotonic() > deadline:
                raise DevDBError(f"no standby after {timeout:.0f} s; see {self.home}/*.log")
            time.sleep(0.2)
