"""``python -m bench <scenario> [...]``: run benchmark scenarios and print a table and JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from psycopg.conninfo import make_conninfo
from rich.console import Console
from rich.table import Table

from bench import harness
from bench.scenarios import held_horizon
from bench.scenarios import jobs as jobs_scenario
from bench.sql.model import Options
from bench.sql.report import render
from pgmbus.dsn import resolve_dsn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("scenarios", nargs="*", help="scenario names (default: list them)")
    parser.add_argument("--dsn", help="server to use (default: PGMBUS_DSN, else embedded)")
    parser.add_argument("--size", type=int, default=None, help="units of work per round")
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds per side (median of these; default 5, or the scenario's default_rounds)",
    )
    parser.add_argument("--json", type=Path, help="also write the JSON report to this file")
    sql = parser.add_argument_group("pgbench scenarios (sql_*)")
    sql.add_argument("--clients", default="1,4,8", help="pgbench client counts (default 1,4,8)")
    sql.add_argument("--seconds", type=float, default=5.0, help="seconds per pgbench run")
    sql.add_argument("--transactions", type=int, help="pgbench -t per client instead of -T")
    sql.add_argument("--sync", help="on, off or on,off (default: each path's own modes)")
    sql.add_argument("--paths", help="comma-separated paths to run (default: all)")
    sql.add_argument("--sides", help="comma-separated sides to run, e.g. raw,pgmbus,pgmq")
    sql.add_argument("--pgmq-sql", type=Path, help="PGMQ's install script (pgmq.sql); else skipped")
    jobs_scenario.add_arguments(parser)
    held_horizon.add_arguments(parser)
    args = parser.parse_args(argv)

    console = Console(stderr=True)
    if not args.scenarios:
        for name in harness.scenario_names():
            module = harness.load(name)
            print(f"{name:24} {module.goal}")
        return 0
    modules = [harness.load(name) for name in args.scenarios]
    sql_reports = [
        m.run_report(_sql_options(args), console.print) for m in modules if _is_pgbench(m)
    ]
    for report in sql_reports:
        render(report)
    modules = [m for m in modules if not _is_pgbench(m)]
    others = [r.as_dict() for r in sql_reports]
    if any(_is_jobs(m) for m in modules):
        admin_dsn = make_conninfo(resolve_dsn(args.dsn), dbname="postgres")
        for m in [m for m in modules if _is_jobs(m)]:
            others.append(m.run_report(args, admin_dsn, console.print))
            m.render(others[-1])
        modules = [m for m in modules if not _is_jobs(m)]
    if not modules:
        text = json.dumps(others, indent=2)
        print(text)
        if args.json:
            args.json.write_text(text)
        return 0
    admin_dsn = make_conninfo(resolve_dsn(args.dsn), dbname="postgres")
    reports = []
    for module in modules:
        name = module.name
        size = args.size or module.default_size
        rounds = args.rounds or getattr(module, "default_rounds", 5)
        console.print(f"[bold]{name}[/]: {module.goal} (size {size}, {rounds} rounds)")
        reports.append(
            harness.run(module, admin_dsn, size=size, rounds=rounds, progress=console.print)
        )

    table = Table("scenario", "unit", "pgmbus median/s", "baseline median/s", "ratio", "goal")
    for r in reports:
        table.add_row(
            r.scenario,
            r.unit,
            f"{r.candidate.median:,.0f}",
            f"{r.baseline.median:,.0f}",
            f"{r.ratio:.2f}x",
            r.goal,
        )
    Console().print(table)
    text = harness.to_json(reports)
    if others:
        text = json.dumps(json.loads(text) + others, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


def _is_pgbench(module: Any) -> bool:
    return bool(getattr(module, "pgbench", False))


def _is_jobs(module: Any) -> bool:
    """Scenarios with a report of their own shape (``run_report`` and ``render``)."""
    return bool(getattr(module, "jobs_scenario", False) or getattr(module, "own_report", False))


def _sql_options(args: argparse.Namespace) -> Options:
    sync = None
    if args.sync:
        sync = tuple({"on": True, "off": False}[s.strip()] for s in args.sync.split(","))
    return Options(
        clients=tuple(int(c) for c in args.clients.split(",")),
        sync=sync,
        rounds=args.rounds or 3,
        seconds=args.seconds,
        transactions=args.transactions,
        paths=tuple(p.strip() for p in args.paths.split(",")) if args.paths else None,
        sides=tuple(s.strip() for s in args.sides.split(",")) if args.sides else None,
        pgmq_sql=args.pgmq_sql,
    )


if __name__ == "__main__":
    sys.exit(main())
