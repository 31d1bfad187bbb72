"""Run the jobs benchmark: servers up, rounds interleaved, medians, a table and JSON."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psycopg

from bench import harness
from bench.jobs import servers, side_celery, side_pgmbus, side_pgqueuer, side_procrastinate
from bench.jobs.measure import Options, one_round
from bench.jobs.side import Env, Side

SIDES: list[Side] = [
    *side_pgmbus.SIDES,
    *side_celery.SIDES,
    *side_pgqueuer.SIDES,
    *side_procrastinate.SIDES,
]
SERVERS = {"redis": servers.redis_server, "rabbitmq": servers.rabbitmq_server}
BASE = "pgmbus"  # the side every ratio is taken against


def pick(names: list[str] | None) -> list[Side]:
    if not names:
        return list(SIDES)
    known = {s.name: s for s in SIDES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown side(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[n] for n in names]


def run(
    admin_dsn: str,
    sides: list[Side],
    opts: Options,
    progress: Callable[[str], None] = lambda _msg: None,
) -> dict[str, Any]:
    """Every side, ``opts.rounds`` rounds, the order of the sides reversed every other round."""
    with (
        harness.scratch_database(admin_dsn, "pgmbus_bench_jobs") as dsn,
        ExitStack() as stack,
        tempfile.TemporaryDirectory(prefix="bench-jobs-") as tmp,
    ):
        env = Env(dsn, statements=_statements_on(dsn))
        for kind in sorted({s.server for s in sides if s.server}):
            progress(f"starting {kind}")
            env.brokers[kind] = stack.enter_context(SERVERS[kind]())
        rounds = asyncio.run(_rounds(env, sides, opts, Path(tmp), progress))
    return _report(sides, opts, rounds)


async def _rounds(
    env: Env, sides: list[Side], opts: Options, folder: Path, progress: Callable[[str], None]
) -> dict[str, list[dict[str, float]]]:
    for side in sides:
        await side.prepare(env)
    results: dict[str, list[dict[str, float]]] = {s.name: [] for s in sides}
    for i in range(opts.rounds):
        order = sides if i % 2 == 0 else list(reversed(sides))
        for side in order:
            r = await one_round(side, env, opts, folder)
            results[side.name].append(r)
            progress(
                f"round {i + 1}/{opts.rounds} {side.name}: drain {r['drain_per_s']:,.0f}/s,"
                f" enqueue {r['enqueue_one_per_s']:,.0f}/s one, {r['enqueue_batch_per_s']:,.0f}/s"
                f" batch, p50 {r['latency_p50_ms']:.1f} ms, p99 {r['latency_p99_ms']:.1f} ms"
            )
    return results


def _statements_on(dsn: str) -> bool:
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            conn.execute("SELECT count(*) FROM pg_stat_statements").fetchone()
    except psycopg.Error:
        return False  # not preloaded on this server: no statement counts
    return True


def _report(
    sides: list[Side], opts: Options, rounds: dict[str, list[dict[str, float]]]
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for side in sides:
        runs = rounds[side.name]
        medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rows.append({"side": side.name, "about": side.about, **medians, "rounds": runs})
    base = next((r for r in rows if r["side"] == BASE), None)
    for row in rows:
        if base is not None:
            row["drain_ratio_pgmbus_to_side"] = base["drain_per_s"] / row["drain_per_s"]
    return {
        "scenario": "jobs",
        "jobs": opts.jobs,
        "rounds": opts.rounds,
        "latency_rate_per_s": opts.rate,
        "latency_jobs": opts.latency_jobs,
        "sides": rows,
    }
