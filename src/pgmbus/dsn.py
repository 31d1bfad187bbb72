"""The one DSN rule: an explicit argument, else ``PGMBUS_DSN``, else the embedded cluster."""

from __future__ import annotations

import os

from pgmbus.devdb import DevCluster
from pgmbus.errors import ConfigurationError


def resolve_dsn(dsn: str | None = None, *, start_embedded: bool = True) -> str:
    """Return the connection string to use.

    Parameters
    ----------
    dsn:
        An explicit connection string; wins when given (even when empty it is an error).
    start_embedded:
        When neither ``dsn`` nor ``PGMBUS_DSN`` is set, start the embedded cluster under
        ``.pgmbus/`` (or ``$PGMBUS_HOME``) if it is not running, creating it on first use.
    """
    if dsn is not None:
        if not dsn.strip():
            raise ConfigurationError("the DSN given is empty")
        return dsn
    env = os.environ.get("PGMBUS_DSN")
    if env:
        return env
    cluster = DevCluster()
    if start_embedded:
        cluster.start()
    return cluster.dsn()
