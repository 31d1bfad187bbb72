"""The chaos suite's fixtures: one durable cluster behind a proxy, and the summary table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pgmbus.testing.chaos import format_table
from tests.chaos.harness import ChaosCluster
from tests.chaos.summary import NOTES, REPORTS, SUMMARY


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
