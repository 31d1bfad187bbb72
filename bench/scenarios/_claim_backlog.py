"""``held_horizon --backlogs``: claim time with a long backlog queued ahead (0, 100k, 1M, 10M).

Per backlog size (``--backlogs``), in one queue: post messages up to that many ready ones
(``postn_<q>``, 10,000 per call), then time ``--claims`` claims of one message each
(``consume_<q>_by_default()``, autocommit, as a consumer at full speed sends them) and report
the mean, p50 and p99 claim time and the table's size. A claim reads the first entry of its
claim index, so its time must not grow with the backlog: the report gives each size's mean as a
ratio to the first size's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from rich.console import Console
from rich.table import Table

from bench.harness import scratch_database
from bench.scenarios._queues import percentile

name = "claim_backlog"
FILL = 10_000  # messages per postn call


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--backlogs",
        help="instead: time claims with these many queued ahead, e.g. 0,100000,1000000",
    )
    group.add_argument("--claims", type=int, default=2_000, help="claims timed per backlog size")


def _fill(conn: psycopg.Connection[Any], upto: int, have: int) -> int:
    body = "x" * 100
    while have < upto:
        n = min(FILL, upto - have)
        batch = [Jsonb({"n": have + k, "body": body}) for k in range(n)]
        conn.execute("SELECT count(*) FROM mbus.postn_cb(%s::jsonb[])", (batch,))
        have += n
    return have


def run_report(
    args: argparse.Namespace, admin_dsn: str, progress: Callable[[str], None]
) -> dict[str, Any]:
    sizes = sorted(int(s) for s in args.backlogs.split(","))
    levels: list[dict[str, Any]] = []
    db = f"pgmbus_bench_claim_backlog_{os.getpid()}"  # two runs at once never share one
    with (
        scratch_database(admin_dsn, db) as dsn,
        psycopg.connect(dsn, autocommit=True, options="-c synchronous_commit=off") as conn,
    ):
        conn.execute("SELECT mbus.create_queue('cb', 1)")
        have = 0
        for size in sizes:
            # the claims below take args.claims messages: post them on top of the backlog
            have = _fill(conn, size + args.claims, have)
            conn.execute("VACUUM ANALYZE mbus.q_cb")
            times = []
            for _ in range(args.claims):
                t0 = time.perf_counter()
                rows = conn.execute("SELECT id FROM mbus.consume_cb_by_default()").fetchall()
                times.append(time.perf_counter() - t0)
                assert len(rows) == 1, "a claim found nothing with a backlog queued"
            have -= args.claims
            mb = conn.execute(
                "SELECT sum(pg_total_relation_size(relid))::bigint "
                "FROM pg_partition_tree('mbus.q_cb'::regclass)"
            ).fetchone()[0]  # type: ignore[index]
            with open("/proc/loadavg") as f:
                load = float(f.read().split()[0])
            levels.append(
                {
                    "backlog": size,
                    "claim_ms_mean": round(1000 * statistics.fmean(times), 3),
                    "claim_ms_p50": round(1000 * percentile(times, 0.5), 3),
                    "claim_ms_p99": round(1000 * percentile(times, 0.99), 3),
                    "mb": round(mb / 2**20, 1),
                    "load_1m": load,
                }
            )
            progress(f"  backlog {size:,}: {levels[-1]['claim_ms_mean']} ms per claim")
    first = levels[0]["claim_ms_mean"]
    for level in levels:
        level["ratio_to_first"] = round(level["claim_ms_mean"] / first, 2)
    return {"scenario": name, "claims": args.claims, "levels": levels}


def render(report: dict[str, Any]) -> None:
    table = Table(
        "backlog", "claim ms mean", "p50", "p99", "vs first", "MB", "load",
        title=f"held_horizon --backlogs: {report['claims']} claims per size",
    )  # fmt: skip
    for x in report["levels"]:
        table.add_row(
            f"{x['backlog']:,}",
            str(x["claim_ms_mean"]),
            str(x["claim_ms_p50"]),
            str(x["claim_ms_p99"]),
            f"{x['ratio_to_first']:.2f}x",
            str(x["mb"]),
            f"{x['load_1m']:.1f}",
        )
    Console(width=160).print(table)
