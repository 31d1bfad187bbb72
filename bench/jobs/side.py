"""What the driver needs from one side: purge, enqueue, and the command of its worker process."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import bench
import pgmbus

QUEUE = "jobs"
BATCH = 100  # jobs per call when enqueueing in batches


@dataclass
class Env:
    """Where the sides run: the scratch database and the brokers started for this run."""

    dsn: str
    brokers: dict[str, str] = field(default_factory=dict)  # "redis"/"rabbitmq" -> URL
    statements: bool = False  # pg_stat_statements is there to count statements per job


class Enqueuer(Protocol):
    async def one(self, n: int) -> None:
        """Enqueue job ``n`` with one call, committed when it returns."""

    async def batch(self, ns: Sequence[int]) -> None:
        """Enqueue jobs ``ns`` with the side's way of sending many at once."""

    async def rolled_back(self, n: int) -> None:
        """Enqueue job ``n`` the way a user would inside a database transaction, then roll the
        transaction back (the side's own connection when it has no way to join it)."""


class Side(Protocol):
    name: str
    server: str | None  # the broker it needs started: "redis", "rabbitmq" or None
    postgres: bool  # whether its jobs live in PostgreSQL (round trips are counted there)
    about: str

    async def prepare(self, env: Env) -> None:
        """Install what the side needs in the scratch database (once per run)."""

    async def purge(self, env: Env) -> None:
        """Remove every queued job."""

    def enqueuer(self, env: Env) -> AbstractAsyncContextManager[Enqueuer]: ...

    def worker_argv(self, env: Env) -> list[str]:
        """The command of the side's one worker process (run with ``worker_env``)."""

    def worker_extra_env(self, env: Env) -> dict[str, str]:
        """Settings of that process beyond the database and the notes' file."""


def worker_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment of a worker process: this checkout's ``bench`` and ``pgmbus`` first."""
    roots = [str(Path(bench.__file__).resolve().parents[1])]
    roots.append(str(Path(pgmbus.__file__).resolve().parents[1]))
    path = os.pathsep.join([*roots, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path, **extra}


def python() -> str:
    return sys.executable
