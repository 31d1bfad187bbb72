"""``python -m bench <scenario> [...]``: run benchmark scenarios and print a table and JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from psycopg.conninfo import make_conninfo
from rich.console import Console
from rich.table import Table

from bench import harness
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
    args = parser.parse_args(argv)

    console = Console(stderr=True)
    if not args.scenarios:
        for name in harness.scenario_names():
            module = harness.load(name)
            print(f"{name:24} {module.goal}")
        return 0
    admin_dsn = make_conninfo(resolve_dsn(args.dsn), dbname="postgres")
    reports = []
    for name in args.scenarios:
        module = harness.load(name)
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
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
