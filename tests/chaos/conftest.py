"""The chaos suite's fixtures: one durable cluster behind a proxy, and the summary table."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pgmbus.testing.chaos import format_table
from tests.chaos.harness import ChaosCluster
from tests.chaos.summary import NOTES, REPORTS, SUMMARY, THREAD_DEATHS

_default_hook = threading.excepthook


def _record_thread_death(args: threading.ExceptHookArgs) -> None:
    """No thread dies silently: a thread ended by an exception fails the next scenario."""
    name = args.thread.name if args.thread is not None else "?"
    THREAD_DEATHS.append(f"{name}: {args.exc_type.__name__}: {args.exc_value}")
    _default_hook(args)


threading.excepthook = _record_thread_death


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The fault runs here start clusters, proxies and worker processes: slow, out of the fast
    tier (`make test-fast`); their checker's own tests stay in it."""
    for item in items:
        path = str(item.fspath)
        if "tests/chaos/" in path and not path.endswith("test_checker.py"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def chaos_cluster() -> Iterator[ChaosCluster]:
    cluster = ChaosCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not REPORTS:
        return
    table = format_table(REPORTS)
    terminalreporter.write_sep("=", "chaos summary")
    terminalreporter.write_line(table)
    for note in NOTES:
        terminalreporter.write_line(note)
    SUMMARY.parent.mkdir(exist_ok=True)
    SUMMARY.write_text(table + "\n\n" + "\n".join(f"- {n}" for n in NOTES) + "\n")
