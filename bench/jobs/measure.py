"""One round of one side: enqueue rates, drain rate, latency at a steady rate, rolled back."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

from bench.jobs import worker
from bench.jobs.side import BATCH, Env, Side
from bench.scenarios._queues import percentile

WARM_UP = -1  # the probe job that tells the latency run its worker is taking jobs
ROLLED_BACK = -2  # the job enqueued in a transaction that is rolled back


@dataclass
class Options:
    jobs: int = 20_000  # queued, then drained, per round and side
    rounds: int = 3
    rate: float = 200.0  # jobs/s of the latency run
    latency_jobs: int = 2_000  # jobs of the latency run
    profile: Path | None = None  # folder for cProfile files of the pgmbus workers


def _timeout(jobs: int) -> float:
    return 120 + jobs / 20  # no side here is slower than 20 jobs/s


async def enqueue_rates(side: Side, env: Env, jobs: int) -> dict[str, float]:
    """Jobs/s enqueued in batches of ``BATCH`` and one per call; leaves ``jobs`` queued."""
    await side.purge(env)
    async with side.enqueuer(env) as enqueuer:
        start = time.perf_counter()
        for first in range(0, jobs, BATCH):
            await enqueuer.batch(range(first, min(jobs, first + BATCH)))
        batch = jobs / (time.perf_counter() - start)
    await side.purge(env)
    async with side.enqueuer(env) as enqueuer:
        start = time.perf_counter()
        for n in range(jobs):
            await enqueuer.one(n)
        one = jobs / (time.perf_counter() - start)
    return {"enqueue_one_per_s": one, "enqueue_batch_per_s": batch}


async def drain(side: Side, env: Env, opts: Options, folder: Path) -> dict[str, float]:
    """Drain the queued jobs with the side's worker: jobs/s from the first start to the last,
    the worker's CPU per job over that span, and PostgreSQL statements per job."""
    prefix = None
    profiled = opts.profile is not None and "pgmbus" in side.name
    if opts.profile and profiled:
        opts.profile.mkdir(parents=True, exist_ok=True)
        prefix = ["-m", "cProfile", "-o", str(opts.profile / f"{side.name}.prof")]
    counted = side.postgres and env.statements
    if counted and profiled:
        _reset_statements(env.dsn)
    calls_before = _statements(env.dsn) if counted else None
    async with worker.started(side, env, opts.jobs, folder, prefix) as w:
        notes = await w.notes(_timeout(opts.jobs))
    if opts.profile and counted and profiled:
        _write_statements(env.dsn, opts.profile / f"{side.name}.statements.txt", opts.jobs)
    starts = sorted(notes.starts.values())
    span = starts[-1] - starts[0]
    result = {
        "drain_per_s": (len(starts) - 1) / span if span > 0 else float("inf"),
        "cpu_ms_per_job": 1000 * notes.cpu_seconds / max(1, len(starts) - 1),
        "duplicates": float(notes.duplicates),
    }
    if calls_before is not None:
        result["statements_per_job"] = (_statements(env.dsn) - calls_before) / opts.jobs
    return result


async def latency(side: Side, env: Env, opts: Options, folder: Path) -> dict[str, float]:
    """Enqueue-to-start latency at a steady ``opts.rate``; whether the rolled-back job ran."""
    await side.purge(env)
    enqueued: dict[int, float] = {}
    counted = side.postgres and env.statements
    calls_before = 0.0
    async with worker.started(side, env, opts.latency_jobs, folder) as w:
        async with side.enqueuer(env) as enqueuer:
            await enqueuer.one(WARM_UP)
            await w.ready(_timeout(0))
            await enqueuer.rolled_back(ROLLED_BACK)
            calls_before = _statements(env.dsn) if counted else 0.0
            start = time.monotonic()
            for n in range(opts.latency_jobs):
                delay = start + n / opts.rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await enqueuer.one(n)
                enqueued[n] = time.monotonic()
            sent = opts.latency_jobs / (time.monotonic() - start)
        notes = await w.notes(_timeout(opts.latency_jobs))
        calls = _statements(env.dsn) - calls_before if counted else 0.0
    waits = [1000 * (notes.starts[n] - t) for n, t in enqueued.items()]
    result = {
        "latency_p50_ms": percentile(waits, 0.5),
        "latency_p99_ms": percentile(waits, 0.99),
        "latency_sent_per_s": sent,
        "rolled_back_ran": float(ROLLED_BACK in notes.starts),
    }
    if counted:
        # the enqueues' statements included: at a steady rate idle polling shows here
        result["latency_statements_per_job"] = calls / opts.latency_jobs
    return result


def _statements(dsn: str) -> float:
    """Statements the server ran in this database so far (pg_stat_statements, top level)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchone()
    return float(row[0]) if row else 0.0


def _reset_statements(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")


def _write_statements(dsn: str, path: Path, jobs: int) -> None:
    """The statements of the drain (since the reset), most called first, calls per job."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT calls, total_exec_time, query FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " ORDER BY calls DESC LIMIT 25"
        ).fetchall()
    lines = [f"{calls / jobs:8.3f}/job {ms / jobs:8.4f} ms/job  {' '.join(q.split())[:160]}"
             for calls, ms, q in rows]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")


async def one_round(side: Side, env: Env, opts: Options, folder: Path) -> dict[str, float]:
    load = os.getloadavg()[0]  # the machine is shared: each figure carries the load it met
    result = await enqueue_rates(side, env, opts.jobs)
    result.update(await drain(side, env, opts, folder))
    result.update(await latency(side, env, opts, folder))
    result["load_1m"] = (load + os.getloadavg()[0]) / 2
    return result
