"""The chaos proxy against a real server: forwarding, cuts, stalls, ambiguous commits."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from pgmbus.testing.chaos import ChaosProxy


@pytest.fixture
def proxy(db_dsn: str) -> Iterator[ChaosProxy]:
    port = int(conninfo_to_dict(db_dsn)["port"] or 5432)
    with ChaosProxy(port, seed=1) as p:
        yield p


@pytest.fixture
def table(db_dsn: str) -> str:
    with psycopg.connect(db_dsn, autocommit=True) as c:
        c.execute("CREATE TABLE t (n int)")
    return db_dsn


def _count(dsn: str) -> int:
    with psycopg.connect(dsn) as c:
        row = c.execute("SELECT count(*) FROM t").fetchone()
    assert row is not None
    return int(row[0])


def test_forwards_and_cut_all_resets_open_connections(proxy: ChaosProxy, db_dsn: str) -> None:
    via = proxy.dsn(db_dsn)
    with psycopg.connect(via, autocommit=True) as c:
        assert c.execute("SELECT 41 + 1").fetchone() == (42,)
        assert proxy.open_connections == 1
        assert proxy.cut_all() == 1
        with pytest.raises(psycopg.OperationalError):
            c.execute("SELECT 1")
    with psycopg.connect(via, autocommit=True) as c:  # new connections go through again
        assert c.execute("SELECT 1").fetchone() == (1,)
    assert proxy.stats.connections == 2


def test_ambiguous_commit_committed_but_the_client_cannot_know(
    proxy: ChaosProxy, table: str
) -> None:
    proxy.settings.ambiguous_commit = 1.0
    with psycopg.connect(proxy.dsn(table)) as c:
        c.execute("INSERT INTO t VALUES (1)")  # BEGIN and INSERT pass
        with pytest.raises(psycopg.OperationalError):
            c.commit()
    assert proxy.stats.ambiguous_commits == 1
    assert _count(table) == 1, "the server committed what the client saw fail"


def test_ambiguous_commit_in_pipeline_mode(proxy: ChaosProxy, table: str) -> None:
    """psycopg's pipeline mode commits with Parse/Bind/Execute/Sync, not a simple query."""
    proxy.settings.ambiguous_commit = 1.0
    c = psycopg.connect(proxy.dsn(table))
    try:
        with pytest.raises(psycopg.OperationalError), c.pipeline():
            c.execute("INSERT INTO t VALUES (1)")
            c.commit()
    finally:
        c.close()
    assert proxy.stats.ambiguous_commits == 1
    assert _count(table) == 1


def test_ambiguous_autocommit_statement(proxy: ChaosProxy, table: str) -> None:
    with psycopg.connect(proxy.dsn(table), autocommit=True) as c:
        proxy.settings.ambiguous_statement = 1.0
        with pytest.raises(psycopg.OperationalError):
            c.execute("INSERT INTO t VALUES (1)")
    assert proxy.stats.ambiguous_statements == 1
    assert _count(table) == 1


def test_a_rolled_back_transaction_is_not_cut(proxy: ChaosProxy, table: str) -> None:
    proxy.settings.ambiguous_commit = 1.0
    with psycopg.connect(proxy.dsn(table)) as c:
        c.execute("INSERT INTO t VALUES (1)")
        c.rollback()
        c.autocommit = True  # no COMMIT at the end of the block either
        assert c.execute("SELECT 1").fetchone() == (1,)
    assert proxy.stats.ambiguous_commits == 0


def test_random_cuts_at_rate_one_cut_the_first_message(proxy: ChaosProxy, db_dsn: str) -> None:
    proxy.settings.random_cut = 1.0
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(proxy.dsn(db_dsn), connect_timeout=3)
    assert proxy.stats.random_cuts >= 1


def test_stall_holds_traffic_until_resume(proxy: ChaosProxy, db_dsn: str) -> None:
    with psycopg.connect(proxy.dsn(db_dsn), autocommit=True) as c:
        proxy.stall()
        result: list[object] = []
        worker = threading.Thread(target=lambda: result.append(c.execute("SELECT 7").fetchone()))
        started = time.monotonic()
        worker.start()
        worker.join(0.5)
        assert worker.is_alive() and not result, "nothing passes while stalled"
        proxy.resume()
        worker.join(5)
        assert result == [(7,)] and time.monotonic() - started >= 0.5


def test_refuse_new_connections(proxy: ChaosProxy, db_dsn: str) -> None:
    proxy.settings.refuse = True
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(proxy.dsn(db_dsn), connect_timeout=3)
    assert proxy.stats.refused == 1
