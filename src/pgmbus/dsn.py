"""The one DSN rule: an argument, else ``PGMBUS_DSN``, else libpq's variables, else the
embedded cluster when it runs (started only when the caller asks, as ``pgmbus dev`` does)."""

from __future__ import annotations

import os

from psycopg.conninfo import make_conninfo

from pgmbus.devdb import DevCluster
from pgmbus.errors import ConfigurationError

# libpq's variables that name a server or a database (passwords, TLS settings and the like are
# read by libpq itself whatever the DSN says, so they are not listed: they choose nothing).
LIBPQ_VARIABLES = {
    "PGHOST": "host",
    "PGHOSTADDR": "hostaddr",
    "PGPORT": "port",
    "PGDATABASE": "dbname",
    "PGUSER": "user",
}


def libpq_dsn() -> str | None:
    """Return a DSN equivalent to libpq's environment, or None when no variable names a server.

    With ``PGSERVICE`` the DSN is ``service=<name>``: libpq then reads the service file first and
    the other variables after it, as it would for an empty DSN. Otherwise it repeats the values of
    ``PGHOST``, ``PGHOSTADDR``, ``PGPORT``, ``PGDATABASE`` and ``PGUSER`` (no secret).
    """
    service = os.environ.get("PGSERVICE", "").strip()
    if service:
        return make_conninfo(service=service)
    found = {kw: os.environ[var] for var, kw in LIBPQ_VARIABLES.items() if os.environ.get(var)}
    return make_conninfo(**found) if found else None


def resolve_dsn(dsn: str | None = None, *, start_embedded: bool = False) -> str:
    """Return the connection string to use.

    Parameters
    ----------
    dsn:
        An explicit connection string; wins when given (even when empty it is an error).
    start_embedded:
        When nothing else names a database, start the embedded cluster under ``.pgmbus/`` (or
        ``$PGMBUS_HOME``), creating it on first use. Without it a cluster that is not running
        is an error that says how to start one (``pgmbus dev start``).

    Raises
    ------
    ConfigurationError
        ``dsn`` is empty, or no source names a database.

    Notes
    -----
    The sources, in order: ``dsn``; ``$PGMBUS_DSN``; libpq's variables (``PGSERVICE``, else
    ``PGHOST``, ``PGHOSTADDR``, ``PGPORT``, ``PGDATABASE``, ``PGUSER``); the embedded cluster.
    """
    if dsn is not None:
        if not dsn.strip():
            raise ConfigurationError("the DSN given is empty")
        return dsn
    env = os.environ.get("PGMBUS_DSN", "").strip()
    if env:
        return env
    from_libpq = libpq_dsn()
    if from_libpq is not None:
        return from_libpq
    cluster = DevCluster()
    if start_embedded:
        cluster.start()
        return cluster.dsn()
    if cluster.initialized and cluster.status().running:
        return cluster.dsn()
    state = "is not running" if cluster.initialized else "does not exist"
    raise ConfigurationError(
        "no database to use: no --dsn, $PGMBUS_DSN is not set, none of libpq's PGSERVICE, "
        f"{', '.join(LIBPQ_VARIABLES)} is set, and the embedded cluster at {cluster.home} "
        f"{state}; start it with `pgmbus dev start`, or set PGMBUS_DSN"
    )
