"""The pgbench scenarios (sql_queues, sql_streams, sql_timers) produce a row per path and side.

Tiny runs (1 client, 1 round, a few pgbench transactions) on one server for the module: each
path has a row per available side with a positive rate, parsed CPU and WAL figures, and a
peer that is not installed (PGMQ without --pgmq-sql, PgQ without its package) is a skipped row.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.__main__ import _sql_options
from bench.sql import pgbench, queues, report, runner, streams, timers
from bench.sql.model import Options, PathSpec
from bench.sql.server import BenchServer


@pytest.fixture(scope="module")
def server() -> Iterator[BenchServer]:
    srv = BenchServer(durable=False).start()
    try:
        yield srv
    finally:
        srv.stop()


def _tiny(**kw: Any) -> Options:
    return Options(clients=(1,), sync=(False,), rounds=1, transactions=3, **kw)


def _check(report: runner.SqlReport, paths: tuple[PathSpec, ...], skipped: set[str]) -> None:
    done = {(r.path, r.side): r for r in report.rows}
    for path in paths:
        for side in path.sides:
            row = done[(path.name, side.name)]
            if side.engine in skipped:
                assert row.skipped, (path.name, side.name)
                continue
            assert row.skipped is None, row.skipped
            assert len(row.samples) == 1
            sample = row.samples[0]
            assert sample.messages > 0 and row.rate > 0, (path.name, side.name)
            assert sample.cpu_seconds >= 0 and row.cpu_us_per_msg >= 0
            assert sample.wal_bytes > 0 or path.name.startswith("read"), (path.name, side.name)
            assert not sample.drained, (path.name, side.name)
            if side.name != "raw" and any(s.name == "raw" for s in path.sides):
                assert row.ratios["raw"] == pytest.approx(row.rate / done[(path.name, "raw")].rate)


def test_sql_queues_rows(server: BenchServer) -> None:
    report = runner.run("sql_queues", queues.SQLFILE, queues.PATHS, _tiny(), server=server)
    _check(report, queues.PATHS, skipped={"pgmq"})
    pgmq = [r for r in report.rows if r.side == "pgmq"]
    assert pgmq and all("--pgmq-sql" in (r.skipped or "") for r in pgmq)
    consumed = {r.path: r.samples[0].messages for r in report.rows if r.side == "pgmbus"}
    assert consumed["pop"] == 3 and consumed["consume100"] == 300  # counted from the backlog


def test_sql_streams_rows(server: BenchServer) -> None:
    report = runner.run("sql_streams", streams.SQLFILE, streams.PATHS, _tiny(), server=server)
    has_pgq = server.has_extension("pgq")
    _check(report, streams.PATHS, skipped=set() if has_pgq else {"pgq"})
    read = {r.side: r for r in report.rows if r.path == "read" and r.skipped is None}
    assert read["pgmbus"].samples[0].messages == 3 * 1000
    read10 = {r.side: r for r in report.rows if r.path == "read10" and r.skipped is None}
    assert read10["pgmbus"].samples[0].messages == 3 * 10
    if has_pgq:
        # a tick per chunk of the fill: batches of 1,000 and of 10 (PgQ's pending count, which
        # the runner counts by, misses one event of the first batch: its first tick records
        # the event sequence before any event)
        assert read["pgq"].samples[0].messages in (3 * 1000 - 1, 3 * 1000)
        assert read10["pgq"].samples[0].messages in (3 * 10 - 1, 3 * 10)


def test_sql_timers_rows(server: BenchServer) -> None:
    report = runner.run("sql_timers", timers.SQLFILE, timers.PATHS, _tiny(), server=server)
    _check(report, timers.PATHS, skipped=set())


def test_missing_pgq_is_skipped_not_a_crash(
    server: BenchServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(BenchServer, "has_extension", lambda self, name: False)
    opts = _tiny(paths=("publish1",), pgmq_sql=tmp_path / "missing.sql")
    report = runner.run("sql_streams", streams.SQLFILE, streams.PATHS, opts, server=server)
    rows = {r.side: r for r in report.rows}
    assert "postgresql-15-pgq3" in (rows["pgq"].skipped or "")
    assert rows["pgmbus"].rate > 0


def test_pgbench_summary_is_parsed_and_failures_raise() -> None:
    out = (
        "number of transactions actually processed: 1200\n"
        "number of failed transactions: 0 (0.000%)\n"
        "latency average = 3.301 ms\n"
        "tps = 1211.5 (without initial connection time)\n"
    )
    result = pgbench.parse(out)
    assert (result.transactions, result.tps, result.latency_ms) == (1200, 1211.5, 3.301)
    with pytest.raises(pgbench.PgbenchError):
        pgbench.parse(out.replace("failed transactions: 0", "failed transactions: 3"))
    with pytest.raises(pgbench.PgbenchError):
        pgbench.parse("pgbench: error: connection refused")


def test_cli_options_reach_the_runner() -> None:
    ns = Namespace(
        clients="1,4",
        sync="off",
        rounds=2,
        seconds=7.0,
        transactions=None,
        paths="pop,lease",
        pgmq_sql=Path("/x/pgmq.sql"),
        sides="raw, pgmbus",
    )
    opts = _sql_options(ns)
    assert opts.clients == (1, 4) and opts.sync == (False,) and opts.rounds == 2
    assert opts.seconds == 7.0 and opts.paths == ("pop", "lease")
    assert opts.pgmq_sql == Path("/x/pgmq.sql")
    assert opts.sides == ("raw", "pgmbus")


def test_markdown_tables_have_a_row_per_side() -> None:
    data = {
        "rows": [
            {
                "path": "pop",
                "side": "raw",
                "clients": 1,
                "synchronous_commit": "off",
                "messages_per_s": 1000.0,
                "ratios": {"pgmbus": 2.0},
                "server_cpu_us_per_msg": 50.0,
                "wal_bytes_per_msg": 300.0,
            },
            {
                "path": "pop",
                "side": "pgmbus",
                "clients": 1,
                "synchronous_commit": "off",
                "messages_per_s": 500.0,
                "ratios": {"raw": 0.5},
                "server_cpu_us_per_msg": 99.0,
                "wal_bytes_per_msg": 340.0,
            },
            {"path": "pop", "side": "pgmq", "skipped": "no --pgmq-sql"},
        ]
    }
    text = report.markdown(data)
    assert "| 1 | off | raw | 1,000 |  | 0.50 | 50.0 | 300 |" in text
    assert "| 1 | off | pgmbus | 500 | 0.50 |  | 99.0 | 340 |" in text
    assert "skipped: no --pgmq-sql" in text


def test_a_reference_that_is_not_a_checkout_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PYTHONPATH=<it>/src would not exist and the import would find this checkout's pgmbus:
    # the "before" side would silently measure the "after" code
    from bench.sql import engines

    monkeypatch.setenv("PGMBUS_REF_SRC", str(tmp_path))
    with pytest.raises(RuntimeError, match="not a pgmbus checkout"):
        engines._mbus_ref("dbname=unused", None, _tiny())  # type: ignore[arg-type]
