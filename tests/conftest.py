"""Shared fixtures: one PostgreSQL server per session, databases per test."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator

import psycopg
import pytest
from hypothesis import settings

from pgmbus.testing.server import TestServer
from tests.tiers import fewer_examples, mark_process_groups, mark_slow

# CI runs every property test with the same examples (a red build must be reproducible, and
# the examples found once stay in the tests as @example); developers' runs explore at random.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slow tests out of the fast tier (`make test-fast`), its fewer generated examples, and
    the groups that keep a module's fixtures in one process under `pytest -n` (tests/tiers.py)."""
    mark_slow(items)
    fewer_examples(items, config.getoption("hypothesis_profile"))
    mark_process_groups(items)


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """Undo what a command run in-process did to the root logger.

    The worker command replaces the root handlers (``pgmbus.workers.logs.configure``) and the
    service commands call ``logging.basicConfig``; run through Typer's or Django's test
    runners, that leaves a root handler on a stream the runner then closes, and everything
    logged later (py4j's INFO lines when Spark's gateway is collected at exit) printed a
    "Logging error" traceback.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        # pytest's own capture handlers come and go by themselves: only plain ones added here
        if handler not in handlers and type(handler) is logging.StreamHandler:
            root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[TestServer]:
    """The session's server (embedded, ephemeral; or the one named by PGMBUS_TEST_DSN)."""
    server = TestServer.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def make_db(pg_server: TestServer) -> Iterator[Callable[..., str]]:
    """Factory of fresh databases (schema installed unless installed=False); returns DSNs."""
    created: list[str] = []

    def factory(*, installed: bool = True) -> str:
        name = pg_server.create_database(installed=installed)
        created.append(name)
        return pg_server.dsn(name)

    yield factory
    for name in created:
        pg_server.drop_database(name)


@pytest.fixture
def db_dsn(make_db: Callable[..., str]) -> str:
    """DSN of a fresh database with the mbus schema, for tests that commit or NOTIFY."""
    return make_db()


@pytest.fixture(scope="session")
def shared_dsn(pg_server: TestServer) -> Iterator[str]:
    """DSN of one installed database shared by the rolled-back tests of the session."""
    name = pg_server.create_database()
    yield pg_server.dsn(name)
    pg_server.drop_database(name)


@pytest.fixture
def conn(shared_dsn: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A connection inside a transaction that is rolled back after the test."""
    with psycopg.connect(shared_dsn) as connection:
        try:
            yield connection
        finally:
            connection.rollback()
