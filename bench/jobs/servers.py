"""Redis and RabbitMQ for the Celery peers: Debian's servers, started and stopped by the bench.

Each runs on a free port of 127.0.0.1 with its data in a private temporary folder, nothing
persisted, and is stopped (with its process group) when the ``with`` block ends.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RABBITMQ_BIN = Path("/usr/lib/rabbitmq/bin")


class ServerMissing(RuntimeError):
    """The Debian package of a peer's server is not installed (``scripts/bootstrap.sh bench``)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout:.0f} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextmanager
def redis_server() -> Iterator[str]:
    """A private ``redis-server``; yields its ``redis://`` URL."""
    exe = shutil.which("redis-server")
    if exe is None:
        raise ServerMissing("redis-server is not installed (Debian's redis-server)")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-redis-") as tmp:
        cmd = [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly"]
        cmd += ["no", "--dir", tmp, "--daemonize", "no", "--logfile", f"{tmp}/redis.log"]
        proc = subprocess.Popen(cmd, start_new_session=True)
        try:
            _wait_for_port(port, proc, "redis-server", 30)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            _stop(proc)


@contextmanager
def rabbitmq_server() -> Iterator[str]:
    """A private RabbitMQ node (no plugins, its own epmd); yields its ``amqp://`` URL."""
    exe = RABBITMQ_BIN / "rabbitmq-server"
    if not exe.exists():
        raise ServerMissing("rabbitmq-server is not installed (Debian's rabbitmq-server)")
    port, dist_port, epmd_port = free_port(), free_port(), free_port()
    with tempfile.TemporaryDirectory(prefix="bench-rabbitmq-") as tmp:
        (Path(tmp) / "plugins").write_text("[].\n")
        node = f"bench{port}@localhost"
        env = {
            **os.environ,
            "HOME": tmp,  # the Erlang cookie goes there
            "RABBITMQ_NODE_PORT": str(port),
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_DIST_PORT": str(dist_port),
            "ERL_EPMD_PORT": str(epmd_port),  # not the machine's shared epmd
            "RABBITMQ_NODENAME": node,
            "RABBITMQ_MNESIA_BASE": f"{tmp}/mnesia",
            "RABBITMQ_LOG_BASE": f"{tmp}/log",
            "RABBITMQ_ENABLED_PLUGINS_FILE": f"{tmp}/plugins",
            "RABBITMQ_CONFIG_FILE": f"{tmp}/none",
        }
        log = (Path(tmp) / "server.out").open("wb")
        proc = subprocess.Popen(
            [str(exe)],
            env=env,
            cwd=tmp,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            _wait_for_port(port, proc, "rabbitmq-server", 120)
            yield f"amqp://guest:guest@127.0.0.1:{port}//"
        finally:
            subprocess.run(
                [str(RABBITMQ_BIN / "rabbitmqctl"), "-n", node, "stop"],
                env=env,
                capture_output=True,
                timeout=60,
                check=False,
            )
            _stop(proc)
            subprocess.run(
                ["epmd", "-port", str(epmd_port), "-kill"],
                env=env,
                capture_output=True,
                timeout=30,
                check=False,
            )
            log.close()
