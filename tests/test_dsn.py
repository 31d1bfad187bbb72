"""The one DSN rule: argument, $PGMBUS_DSN, libpq's variables, then a running embedded cluster."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict

from pgmbus.devdb import DevCluster
from pgmbus.dsn import LIBPQ_VARIABLES, resolve_dsn
from pgmbus.errors import ConfigurationError
from pgmbus.testing.server import TestServer


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Path:
    """No DSN source in the environment; PGMBUS_HOME is an empty folder."""
    for var in ("PGMBUS_DSN", "PGSERVICE", *LIBPQ_VARIABLES):
        monkeypatch.delenv(var, raising=False)
    home = Path(tempfile.mkdtemp(prefix="pgmbus-dsn-")) / "home"
    monkeypatch.setenv("PGMBUS_HOME", str(home))
    return home


def test_explicit_argument_wins_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGMBUS_DSN", "dbname=from_env")
    monkeypatch.setenv("PGHOST", "libpq-host")
    assert resolve_dsn("dbname=explicit") == "dbname=explicit"


def test_pgmbus_dsn_wins_over_libpq_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGMBUS_DSN", "dbname=from_env")
    monkeypatch.setenv("PGHOST", "libpq-host")
    assert resolve_dsn() == "dbname=from_env"


def test_libpq_variables_win_over_the_embedded_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGHOST", "db.internal")
    monkeypatch.setenv("PGPORT", "6543")
    monkeypatch.setenv("PGDATABASE", "app")
    monkeypatch.setenv("PGUSER", "svc")
    monkeypatch.setenv("PGPASSWORD", "secret")
    dsn = resolve_dsn()
    assert conninfo_to_dict(dsn) == {
        "host": "db.internal",
        "port": "6543",
        "dbname": "app",
        "user": "svc",
    }
    assert "secret" not in dsn  # libpq reads PGPASSWORD itself


def test_pgservice_defers_to_the_service_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGSERVICE", "billing")
    monkeypatch.setenv("PGHOST", "db.internal")
    assert conninfo_to_dict(resolve_dsn()) == {"service": "billing"}


def test_empty_explicit_dsn_is_an_error() -> None:
    with pytest.raises(ConfigurationError, match="empty"):
        resolve_dsn("  ")


def test_nothing_found_says_what_was_checked_and_starts_nothing(clean_environment: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        resolve_dsn()
    message = str(caught.value)
    for source in ("--dsn", "$PGMBUS_DSN", "PGHOST", "PGSERVICE", str(clean_environment)):
        assert source in message
    assert "`pgmbus dev start`" in message
    assert not clean_environment.exists()  # no cluster was created


def test_the_running_embedded_cluster_is_used(
    monkeypatch: pytest.MonkeyPatch, pg_server: TestServer
) -> None:
    if pg_server.cluster is None:
        pytest.skip("the session server is external (PGMBUS_TEST_DSN)")
    monkeypatch.setenv("PGMBUS_HOME", str(pg_server.cluster.home))
    assert resolve_dsn() == DevCluster(pg_server.cluster.home).dsn()
    assert "host=127.0.0.1" in resolve_dsn()
