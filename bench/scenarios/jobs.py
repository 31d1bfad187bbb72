"""Jobs per second end to end: pgmbus's worker against Celery, PgQueuer and procrastinate.

Per side and round: enqueue rate (one per call, and in batches), the drain rate of ``--jobs``
queued no-op jobs by one worker process, enqueue-to-start latency p50/p99 at a steady
``--rate``, and whether a job enqueued in a rolled-back transaction runs. Not a
candidate/baseline pair: ``python -m bench jobs`` runs it through ``run_report``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.jobs import run
from bench.jobs.measure import Options

name = "jobs"
unit = "jobs"
goal = "jobs/s end to end: pgmbus worker vs Celery (pgmbus://, Redis, RabbitMQ), PgQueuer, ..."
jobs_scenario = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("jobs scenario (also --rounds, --sides)")
    group.add_argument("--jobs", type=int, default=20_000, help="jobs queued and drained")
    group.add_argument("--rate", type=float, default=200.0, help="jobs/s of the latency run")
    group.add_argument(
        "--latency-jobs", type=int, default=2_000, help="jobs of the latency run (default 2000)"
    )
    group.add_argument("--profile", help="folder for cProfile files of the pgmbus workers")


def run_report(
    args: argparse.Namespace, admin_dsn: str, progress: Callable[[str], None]
) -> dict[str, Any]:
    from pathlib import Path

    opts = Options(
        jobs=args.jobs,
        rounds=args.rounds or 3,
        rate=args.rate,
        latency_jobs=args.latency_jobs,
        profile=Path(args.profile) if args.profile else None,
    )
    sides = run.pick([s.strip() for s in args.sides.split(",")] if args.sides else None)
    progress(f"[bold]jobs[/]: {len(sides)} sides, {opts.jobs} jobs, {opts.rounds} rounds")
    return run.run(admin_dsn, sides, opts, progress)


def render(report: dict[str, Any]) -> None:
    table = Table(
        "side", "enqueue 1/call /s", "enqueue batch /s", "drain /s", "pgmbus/side",
        "CPU ms/job", "stmts/job", "p50 ms", "p99 ms", "rolled back runs", "load",
        title=f"jobs: {report['jobs']} drained, {report['rounds']} rounds (medians)",
    )  # fmt: skip
    for r in report["sides"]:
        table.add_row(
            r["side"],
            f"{r['enqueue_one_per_s']:,.0f}",
            f"{r['enqueue_batch_per_s']:,.0f}",
            f"{r['drain_per_s']:,.0f}",
            f"{r['drain_ratio_pgmbus_to_side']:.2f}x" if "drain_ratio_pgmbus_to_side" in r else "",
            f"{r['cpu_ms_per_job']:.2f}",
            f"{r['statements_per_job']:.1f}" if "statements_per_job" in r else "",
            f"{r['latency_p50_ms']:.1f}",
            f"{r['latency_p99_ms']:.1f}",
            "yes" if r["rolled_back_ran"] else "no",
            f"{r['load_1m']:.1f}",
        )
    Console(width=200).print(table)
