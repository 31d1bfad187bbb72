"""The one DSN rule: explicit argument, else PGMBUS_DSN, else the embedded cluster."""

from __future__ import annotations

import pytest

from pgmbus.devdb import DevCluster
from pgmbus.dsn import resolve_dsn
from pgmbus.errors import ConfigurationError
from pgmbus.testing.server import TestServer


def test_explicit_argument_wins_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGMBUS_DSN", "dbname=from_env")
    assert resolve_dsn("dbname=explicit") == "dbname=explicit"


def test_environment_wins_over_embedded(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setenv("PGMBUS_DSN", "dbname=from_env")
    monkeypatch.setenv("PGMBUS_HOME", "/nonexistent/never/created")
    assert resolve_dsn() == "dbname=from_env"


def test_empty_explicit_dsn_is_an_error() -> None:
    with pytest.raises(ConfigurationError, match="empty"):
        resolve_dsn("  ")


def test_embedded_cluster_when_nothing_is_set(
    monkeypatch: pytest.MonkeyPatch, pg_server: TestServer
) -> None:
    if pg_server.cluster is None:
        pytest.skip("the session server is external (PGMBUS_TEST_DSN)")
    monkeypatch.delenv("PGMBUS_DSN", raising=False)
    monkeypatch.setenv("PGMBUS_HOME", str(pg_server.cluster.home))
    assert resolve_dsn() == DevCluster(pg_server.cluster.home).dsn()
    assert "host=127.0.0.1" in resolve_dsn()
