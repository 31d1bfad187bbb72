"""The embedded PostgreSQL cluster behind ``pgmbus dev``, the demo and the test suite.

A private cluster lives under ``.pgmbus/`` in the current directory (or ``$PGMBUS_HOME``). It is
created on first use with the server binaries found on the machine, listens on a unix socket in
``<home>/run`` and on 127.0.0.1 at a free port, and trusts local connections: it is a development
server, never a production one. PostgreSQL refuses to run as root, so when this process is root
the server runs as an unprivileged user (``$PGMBUS_SERVER_USER``, else ``postgres``, else a
``pgmbus`` system user created on demand) that owns the cluster directory.

This module uses the standard library only, so it also runs under a system Python.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pgmbus.errors import DevDBError

DEFAULT_DATABASE = "pgmbus"
SUPERUSER = "postgres"
DEBIAN_PACKAGE_HINT = (
    "install Debian's server package: `apt-get install postgresql postgresql-contrib` "
    "(or set PGMBUS_DSN to use an existing server)"
)


def default_home() -> Path:
    """Return the cluster folder: ``$PGMBUS_HOME`` or ``./.pgmbus``."""
    env = os.environ.get("PGMBUS_HOME")
    return Path(env).expanduser().resolve() if env else Path.cwd().resolve() / ".pgmbus"


SERVER_GLOBS = ("/usr/lib/postgresql/*/bin",)


def find_bindir(globs: Sequence[str] = SERVER_GLOBS) -> Path:
    """Find the PostgreSQL server binaries (``pg_config --bindir``, then Debian's layout)."""
    candidates: list[Path] = []
    env = os.environ.get("PGMBUS_PG_BINDIR")
    if env:
        candidates.append(Path(env))
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.CalledProcessError):
            out = subprocess.run(
                [pg_config, "--bindir"], check=True, capture_output=True, text=True
            ).stdout.strip()
            candidates.append(Path(out))

    def version_key(path: str) -> tuple[int, ...]:
        part = Path(path).parent.name
        return tuple(int(x) for x in part.split(".") if x.isdigit())

    for pattern in globs:
        for found in sorted(glob.glob(pattern), key=version_key, reverse=True):
            candidates.append(Path(found))
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file():
            return bindir
    raise DevDBError(f"no PostgreSQL server binaries (initdb, pg_ctl) found; {DEBIAN_PACKAGE_HINT}")


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int) -> bool:
    """Tell whether the server could listen on 127.0.0.1:port now.

    The probe binds with ``SO_REUSEADDR`` as the postmaster does, so connections of a previous
    server still in TIME_WAIT do not count as taken; a listening socket does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _processes_in(folder: Path) -> list[int]:
    """Pids of the processes whose working directory is ``folder`` (a server's backends)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if Path(os.readlink(entry / "cwd")) == folder:
                found.append(int(entry.name))
    return found


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_postgres_process(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"postgres" in cmdline


@dataclass(frozen=True)
class ClusterStatus:
    """What ``pgmbus dev status`` reports."""

    home: Path
    initialized: bool
    running: bool
    pid: int | None
    port: int | None
    server_user: str
    version: str | None
    dsn: str | None


class DevCluster:
    """A private PostgreSQL cluster in a folder of its own.

    Parameters
    ----------
    home:
        The cluster folder; defaults to ``$PGMBUS_HOME`` or ``./.pgmbus``.
    server_user:
        The operating-system user that runs the server when this process is root.
    ephemeral:
        Trade durability for speed (``fsync=off``, no sync at initdb); for test clusters.
    """

    def __init__(
        self,
        home: Path | str | None = None,
        *,
        server_user: str | None = None,
        ephemeral: bool = False,
    ) -> None:
        self.home = Path(home).resolve() if home is not None else default_home()
        self.ephemeral = ephemeral
        self._server_user = server_user or os.environ.get("PGMBUS_SERVER_USER")
        self.data_dir = self.home / "data"
        self.socket_dir = self.home / "run"
        self.log_file = self.home / "postgres.log"
        self.state_file = self.home / "state.json"

    # --- identity -------------------------------------------------------------------------------
    @property
    def as_root(self) -> bool:
        return os.geteuid() == 0

    @property
    def server_user(self) -> str:
        """The user that owns the data directory and runs the server."""
        if not self.as_root:
            return pwd.getpwuid(os.geteuid()).pw_name
        state = self._read_state()
        if state.get("server_user"):
            return str(state["server_user"])
        if self._server_user:
            return self._server_user
        for name in ("postgres", "pgmbus"):
            with contextlib.suppress(KeyError):
                pwd.getpwnam(name)
                return name
        return "pgmbus"

    def _ensure_server_user(self) -> None:
        if not self.as_root:
            return
        user = self.server_user
        try:
            pwd.getpwnam(user)
        except KeyError:
            subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user],
                check=True,
                capture_output=True,
            )

    def _server_cmd(self, argv: Sequence[str]) -> list[str]:
        if self.as_root:
            return ["runuser", "-u", self.server_user, "--", *argv]
        return list(argv)

    def _run(self, argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            self._server_cmd(argv), capture_output=True, text=True, cwd=str(self.home)
        )
        if check and proc.returncode != 0:
            raise DevDBError(
                f"{Path(argv[0]).name} failed (exit {proc.returncode}): "
                f"{(proc.stderr or proc.stdout).strip()}"
            )
        return proc

    # --- state ----------------------------------------------------------------------------------
    def _read_state(self) -> dict[str, object]:
        try:
            loaded = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def _write_state(self, **values: object) -> None:
        state = self._read_state()
        state.update(values)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2, sort_keys=True))
        tmp.replace(self.state_file)

    @property
    def initialized(self) -> bool:
        return (self.data_dir / "PG_VERSION").is_file()

    @property
    def port(self) -> int | None:
        value = self._read_state().get("port")
        return int(value) if isinstance(value, int | str) and str(value).isdigit() else None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialize management commands on this cluster (two ``start`` at once are safe)."""
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.home / ".lock", "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # --- life cycle -----------------------------------------------------------------------------
    def _check_reachable(self) -> None:
        """As root, make sure the server user can enter every folder above the cluster."""
        if not self.as_root:
            return
        probe = subprocess.run(
            ["runuser", "-u", self.server_user, "--", "test", "-x", str(self.home)],
            capture_output=True,
        )
        if probe.returncode != 0:
            raise DevDBError(
                f"the server user {self.server_user!r} cannot enter {self.home}; "
                "set PGMBUS_HOME to a folder whose parents it can traverse"
            )

    def init(self) -> None:
        """Create the cluster if it does not exist yet (idempotent)."""
        bindir = find_bindir()
        if self.initialized:
            return
        self._ensure_server_user()
        self.home.mkdir(parents=True, exist_ok=True)
        self.home.chmod(0o755)
        if self.as_root:
            shutil.chown(self.home, user=self.server_user)
        self._check_reachable()
        if self.data_dir.exists():
            shutil.rmtree(self.data_dir)  # a half-made data dir from an interrupted initdb
        argv = [
            str(bindir / "initdb"),
            "-D",
            str(self.data_dir),
            "-U",
            SUPERUSER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-locale",
        ]
        if self.ephemeral:
            argv.append("--no-sync")
        self._run(argv)
        port = free_port()
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{self.socket_dir}'",
            "port": str(port),
            "max_connections": "200",
            "logging_collector": "off",
        }
        if self.ephemeral:
            settings.update(fsync="off", full_page_writes="off", synchronous_commit="off")
        preload: list[str] = []
        if (bindir.parent / "lib" / "pg_cron.so").exists():
            # `pgmbus install --schedule` runs the storage upkeep from pg_cron (Debian's
            # postgresql-<n>-cron); its jobs run as background workers, no libpq login needed
            preload.append("pg_cron")
            settings.update(
                **{"cron.database_name": "'postgres'", "cron.use_background_workers": "on"},
                max_worker_processes="32",
            )
        if (bindir.parent / "lib" / "pg_stat_statements.so").exists():
            # per-statement time and planning counts, nested statements included once a
            # session sets pg_stat_statements.track = all (docs/benchmarks.md's profiles; the
            # test that no function plans a statement again on every call)
            preload.append("pg_stat_statements")
        if preload:
            settings["shared_preload_libraries"] = "'" + ", ".join(preload) + "'"
        version = (self.data_dir / "PG_VERSION").read_text().strip()
        if version.isdigit() and int(version) >= 14:
            # after a crash the startup syncs the data folder before recovery: one syncfs call
            # instead of one fsync per file (measured 4-13 s with `fsync` on a busy machine)
            settings["recovery_init_sync_method"] = "syncfs"

        conf = "".join(f"{key} = {value}\n" for key, value in settings.items())
        self._append_conf(conf)
        self.socket_dir.mkdir(exist_ok=True)
        if self.as_root:
            shutil.chown(self.socket_dir, user=self.server_user)
        self._write_state(port=port, server_user=self.server_user, bindir=str(bindir))

    def _append_conf(self, text: str) -> None:
        conf_file = self.data_dir / "postgresql.conf"
        with open(conf_file, "a") as handle:
            handle.write("\n# pgmbus dev cluster\n" + text)

    def _set_port(self, port: int) -> None:
        self._write_state(port=port)

    def _clear_stale_pid(self) -> None:
        """Remove a postmaster.pid left by a killed server so that start can proceed."""
        pid_file = self.data_dir / "postmaster.pid"
        try:
            first = pid_file.read_text().splitlines()[0]
        except (OSError, IndexError):
            return
        pid = int(first) if first.strip().isdigit() else -1
        if pid > 0 and _pid_alive(pid) and _is_postgres_process(pid):
            return
        pid_file.unlink(missing_ok=True)

    def _running_pid(self) -> int | None:
        pid_file = self.data_dir / "postmaster.pid"
        try:
            first = pid_file.read_text().splitlines()[0]
        except (OSError, IndexError):
            return None
        pid = int(first) if first.strip().isdigit() else -1
        if pid > 0 and _pid_alive(pid) and _is_postgres_process(pid):
            return pid
        return None

    def start(
        self, timeout: float = 60.0, *, port_wait: float = 30.0, new_port: bool = False
    ) -> ClusterStatus:
        """Create the cluster if needed and start it; harmless when it already runs.

        The server comes back on the port it had, so clients holding the DSN reconnect: after a
        crash (``kill -9``) the start first waits, up to ``port_wait`` seconds, for the old
        server's processes to exit and its port to be free. A port held by another program
        raises :class:`~pgmbus.errors.DevDBError` naming it; ``new_port=True`` moves the
        cluster to a free port instead.
        """
        with self._locked():
            self.init()
            if self._running_pid() is None:
                self._start_server(timeout, port_wait=port_wait, new_port=new_port)
            self._ensure_database(DEFAULT_DATABASE)
        return self.status()

    def _wait_for_previous_server(self, port: int, wait: float) -> None:
        """Wait until no process of a previous server runs in the data folder and ``port`` is
        free; raise a ``DevDBError`` that says which of the two did not happen in time."""
        deadline = time.monotonic() + wait
        while True:
            leftovers = _processes_in(self.data_dir)
            free = port_is_free(port)
            if not leftovers and free:
                return
            if time.monotonic() >= deadline:
                if leftovers:
                    raise DevDBError(
                        f"processes of a previous server still run in {self.data_dir} after "
                        f"{wait:.0f}s (pids {', '.join(map(str, leftovers))}); stop them"
                    )
                raise DevDBError(
                    f"port {port} on 127.0.0.1 is taken by another program; stop it, or run "
                    "`pgmbus dev start --new-port` to move the cluster (clients must then use "
                    "the new DSN)"
                )
            time.sleep(0.1)

    def _start_server(self, timeout: float, *, port_wait: float, new_port: bool) -> None:
        bindir = find_bindir()
        self._clear_stale_pid()
        port = self.port
        if port is None or (new_port and not port_is_free(port)):
            self._set_port(free_port())
        else:
            self._wait_for_previous_server(port, port_wait)
        deadline = time.monotonic() + timeout
        while True:
            proc = self._run(
                [
                    str(bindir / "pg_ctl"),
                    "-D",
                    str(self.data_dir),
                    "-l",
                    str(self.log_file),
                    "-o",
                    f"-p {self.port}",
                    "-w",
                    "-t",
                    str(int(timeout)),
                    "start",
                ],
                check=False,
            )
            if proc.returncode == 0:
                return
            # After a kill -9 of the postmaster its children may still hold the shared memory
            # for a moment; they exit when they notice the postmaster is gone.
            if time.monotonic() > deadline:
                tail = self._log_tail()
                raise DevDBError(f"the server did not start: {proc.stderr.strip()}\n{tail}")
            self._clear_stale_pid()
            time.sleep(0.5)

    def _log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _psql(self, script: str, dbname: str = "postgres", **variables: str) -> str:
        """Run a psql script; values go in as psql variables (``:'name'``), never spliced."""
        argv = [str(find_bindir() / "psql"), "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1"]
        for key, value in variables.items():
            argv += ["-v", f"{key}={value}"]
        proc = subprocess.run(
            [*argv, self.dsn(dbname)], input=script, capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise DevDBError(f"psql failed: {proc.stderr.strip()}")
        return proc.stdout.strip()

    def _ensure_database(self, dbname: str) -> None:
        exists = self._psql("SELECT 1 FROM pg_database WHERE datname = :'db';", db=dbname)
        if not exists:
            self._psql('CREATE DATABASE :"db";', db=dbname)

    def require_initialized(self) -> None:
        """Raise ``DevDBError`` unless a cluster exists here: only ``start`` creates one."""
        if not self.initialized:
            raise DevDBError(
                f"no cluster at {self.home}: `pgmbus dev start` creates one there, or set "
                "PGMBUS_HOME to the folder of an existing one (commands run in another folder "
                "look in its .pgmbus/)"
            )

    def stop(self, timeout: float = 60.0) -> bool:
        """Stop the server (fast shutdown); return whether it was running."""
        if not self.initialized:
            return False  # nothing to stop, and no folder to create for the lock
        with self._locked():
            if not self.initialized or self._running_pid() is None:
                self._clear_stale_pid()
                return False
            self._run(
                [
                    str(find_bindir() / "pg_ctl"),
                    "-D",
                    str(self.data_dir),
                    "-m",
                    "fast",
                    "-w",
                    "-t",
                    str(int(timeout)),
                    "stop",
                ]
            )
            return True

    def destroy(self) -> None:
        """Stop the server and delete the cluster folder."""
        if self.initialized:
            try:
                self.stop()
            except DevDBError:
                pid = self._running_pid()
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.home, ignore_errors=True)

    # --- reporting ------------------------------------------------------------------------------
    def dsn(self, dbname: str = DEFAULT_DATABASE) -> str:
        """Return a libpq connection string for this cluster (TCP on 127.0.0.1)."""
        port = self.port
        if port is None:
            raise DevDBError(f"no cluster at {self.home}; run `pgmbus dev start`")
        return f"host=127.0.0.1 port={port} user={SUPERUSER} dbname={dbname}"

    def status(self) -> ClusterStatus:
        pid = self._running_pid() if self.initialized else None
        version = None
        if self.initialized:
            version = (self.data_dir / "PG_VERSION").read_text().strip()
        return ClusterStatus(
            home=self.home,
            initialized=self.initialized,
            running=pid is not None,
            pid=pid,
            port=self.port,
            server_user=self.server_user,
            version=version,
            dsn=self.dsn() if self.port is not None else None,
        )

    def psql_argv(self, dbname: str = DEFAULT_DATABASE) -> list[str]:
        """The command line that opens psql on this cluster."""
        return [str(find_bindir() / "psql"), self.dsn(dbname)]
