"""Install each engine into a template database with its own tools, or say why it cannot.

pgmbus: ``pgmbus.schema.install``. PgQ: ``CREATE EXTENSION pgq`` (Debian
``postgresql-15-pgq3``). PgQueuer: its own ``Queries.install()``. procrastinate: its own
``SchemaManager.get_schema()`` (the package's ``sql/schema.sql``). PGMQ: the plain-SQL install
script given with ``--pgmq-sql`` (``pgmq-extension/sql/pgmq.sql`` of pgmq/pgmq; not in a
registry), run by psql. Raw SQL needs nothing.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable

import psycopg

from bench.sql.model import Options
from bench.sql.server import BenchServer
from pgmbus import schema

ENGINES = ("plain", "mbus", "mbus_ref", "pgq", "pgmq", "pgqueuer", "procrastinate")


def unavailable(engine: str, server: BenchServer, opts: Options) -> str | None:
    """Why ``engine`` cannot be measured here, or None when it can."""
    if engine == "pgq" and not server.has_extension("pgq"):
        return (
            "PgQ is not installed: `apt-get install postgresql-15-pgq3` "
            "(or `scripts/bootstrap.sh bench`)"
        )
    if engine == "pgmq":
        if opts.pgmq_sql is None:
            return "PGMQ needs its install script: --pgmq-sql PATH (pgmq-extension/sql/pgmq.sql)"
        if not opts.pgmq_sql.is_file():
            return f"--pgmq-sql {opts.pgmq_sql}: no such file"
    if engine in ("pgqueuer", "procrastinate") and importlib.util.find_spec(engine) is None:
        return f"{engine} is not installed: pip install 'pgmbus[bench]'"
    return None


def _mbus(dsn: str, server: BenchServer, opts: Options) -> None:
    with psycopg.connect(dsn) as conn:
        schema.install(conn)


def _mbus_ref(dsn: str, server: BenchServer, opts: Options) -> None:
    """pgmbus's schema as the checkout at $PGMBUS_REF_SRC installs it (its own Python)."""
    src = os.environ["PGMBUS_REF_SRC"]
    if not os.path.isdir(os.path.join(src, "src", "pgmbus")):
        # else the import below finds this checkout's pgmbus and both sides measure the same
        raise RuntimeError(f"PGMBUS_REF_SRC={src} is not a pgmbus checkout (no src/pgmbus)")
    code = (
        "import sys, psycopg\nfrom pgmbus import schema\n"
        "with psycopg.connect(sys.argv[1]) as conn:\n    schema.install(conn)\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{src}/src"}
    proc = subprocess.run(
        [sys.executable, "-c", code, dsn], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"installing pgmbus from {src} failed: {proc.stderr[-1000:]}")


def _pgq(dsn: str, server: BenchServer, opts: Options) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION pgq")


def _pgmq(dsn: str, server: BenchServer, opts: Options) -> None:
    assert opts.pgmq_sql is not None
    argv = [
        str(server.bindir / "psql"),
        "-X",
        "-q",
        "-v",
        "ON_ERROR_STOP=1",
        "-f",
        str(opts.pgmq_sql),
        dsn,
    ]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"installing PGMQ from {opts.pgmq_sql} failed: {proc.stderr[-1000:]}")


def _pgqueuer(dsn: str, server: BenchServer, opts: Options) -> None:
    from pgqueuer import Queries
    from pgqueuer.db import PsycopgDriver

    async def install() -> None:
        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        try:
            await Queries(PsycopgDriver(conn)).install()
        finally:
            await conn.close()

    asyncio.run(install())


def _procrastinate(dsn: str, server: BenchServer, opts: Options) -> None:
    from procrastinate.schema import SchemaManager

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SchemaManager.get_schema())


_INSTALL: dict[str, Callable[[str, BenchServer, Options], None]] = {
    "mbus": _mbus,
    "mbus_ref": _mbus_ref,
    "pgq": _pgq,
    "pgmq": _pgmq,
    "pgqueuer": _pgqueuer,
    "procrastinate": _procrastinate,
}


def install(engine: str, dsn: str, server: BenchServer, opts: Options) -> None:
    """Install ``engine`` into the (empty) database at ``dsn``."""
    func = _INSTALL.get(engine)
    if func is not None:
        func(dsn, server, opts)
