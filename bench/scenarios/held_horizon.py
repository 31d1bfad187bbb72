"""Claims while the xmin horizon is held: pgmbus, PGMQ and raw SQL under one long transaction.

Per offered load (``--rates``, default 1,000/s and 200/s) and side, in a fresh database: a
producer posts at that rate (a batch every 10 ms), ``--consumers`` consumers claim one message
per transaction at full speed, and the run has three phases of ``--window``-second windows:
``--warm-windows`` unheld, ``--minutes`` with a REPEATABLE READ transaction held open in the
same database (it holds the xmin horizon: no consumed row can be removed), and
``--after-windows`` after its release. Then the producer stops and the consumers drain the
backlog (500 per claim, not timed); every posted message must be claimed exactly once (``lost``
and ``duplicates`` are 0).

Per window: claims per second, the mean and p99 claim time (one call, as the client sees it),
the backlog (posted - claimed) and the queue's storage (table, segments, indexes, TOAST). Per
side: the unheld rate, the held window at minute 8 (the last held window when the hold is
shorter) as a ratio to it, and the storage before the hold, at its peak and at the end. The
sides: pgmbus ``consume_<q>_by_default()`` (autocommit, the simple protocol, so its claims'
upkeep rotates and truncates), PGMQ ``pgmq.pop`` (its plain-SQL install script,
``--pgmq-sql``; skipped without it), a raw ``DELETE ... SKIP LOCKED`` on one table, and a
pgmbus stream group read one event per transaction (``read_next`` + ``commit``; its storage is
the event log and the cursor table).

With ``--backlogs``, the run times claims with long backlogs queued ahead instead
(``bench/scenarios/_claim_backlog.py``).
Sessions run with ``synchronous_commit = off``. Sides run one after another (each side alone
on the machine); quote the load (``load_1m`` per window) with the numbers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from rich.console import Console
from rich.table import Table

from bench.harness import scratch_database
from bench.scenarios import _claim_backlog
from bench.scenarios._queues import RAW_INSERT_MANY, RAW_TABLE, percentile
from pgmbus.devdb import find_bindir

name = "held_horizon"
unit = "claims"
goal = "through a held xmin horizon pgmbus keeps >= 0.9x its unheld claims/s; peers collapse"
own_report = True
SIDES = ("pgmbus", "pgmq", "raw", "stream")
TICK = 0.01  # the producer posts a batch every TICK seconds
AT_MINUTE = 8.0  # the held window the summary compares


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("held_horizon scenario (also --sides, --pgmq-sql)")
    group.add_argument("--minutes", type=float, default=10.0, help="minutes the horizon is held")
    group.add_argument("--window", type=float, default=30.0, help="seconds per window")
    group.add_argument("--rates", default="1000,200", help="offered posts/s (default 1000,200)")
    group.add_argument("--warm-windows", type=int, default=2, help="unheld windows first")
    group.add_argument("--after-windows", type=int, default=4, help="windows after the release")
    group.add_argument("--consumers", type=int, default=2, help="consumer sessions per side")
    group.add_argument(
        "--rotate-bytes",
        type=int,
        help="pgmbus: the queue's segment size (queue_segment.rotate_bytes; default 8 MB)",
    )
    _claim_backlog.add_arguments(group)


@dataclass
class Options:
    minutes: float
    window: float
    rates: tuple[int, ...]
    warm: int
    after: int
    consumers: int
    sides: tuple[str, ...]
    rotate_bytes: int | None
    pgmq_sql: Path | None


class Side:
    """One engine's statements: set up a queue, post a batch, claim one, measure storage, and
    claim up to 500 at once (the drain at the end, not measured)."""

    def __init__(
        self, name: str, setup: list[str], post: str, claim: str, size: str, drain: str
    ) -> None:
        self.name = name
        self.setup_sql = setup
        self.post_sql = post
        self.claim_sql = claim
        self.size_sql = size
        self.drain_sql = drain


_SIZE_PARTS = """SELECT sum(pg_total_relation_size(relid))::bigint
FROM pg_partition_tree(%s::regclass)"""
PGMBUS = Side(
    "pgmbus",
    ["SELECT mbus.create_queue('hh', 1)"],
    "SELECT count(*) FROM mbus.postn_hh(%s::jsonb[])",
    "SELECT id FROM mbus.consume_hh_by_default()",
    _SIZE_PARTS.replace("%s", "'mbus.q_hh'"),
    "SELECT id FROM mbus.consumen_hh_by_default(500)",
)
PGMQ = Side(
    "pgmq",
    ["SELECT pgmq.create('hh')"],
    "SELECT count(*) FROM pgmq.send_batch('hh', %s::jsonb[])",
    "SELECT msg_id FROM pgmq.pop('hh')",
    "SELECT pg_total_relation_size('pgmq.q_hh')",
    "SELECT r.msg_id FROM pgmq.read('hh', 30, 500) AS r WHERE pgmq.delete('hh', r.msg_id)",
)
RAW = Side(
    "raw",
    [RAW_TABLE],
    RAW_INSERT_MANY.replace("%s", "%s::jsonb[]"),
    """DELETE FROM bench_raw_queue WHERE id = (
        SELECT id FROM bench_raw_queue ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id""",
    "SELECT pg_total_relation_size('bench_raw_queue')",
    """DELETE FROM bench_raw_queue WHERE id = ANY (ARRAY(
        SELECT id FROM bench_raw_queue ORDER BY id LIMIT 500 FOR UPDATE SKIP LOCKED))
    RETURNING id""",
)
# A stream group read one event per transaction (read_next, then commit of its cursor): the
# events are never deleted, but each commit writes a new version of the group's cursor row.
STREAM = Side(
    "stream",
    ["SELECT mbus.create_group('hh', 'now', 1)"],
    "SELECT mbus.publish_batch('hh', %s::jsonb[])",
    """SELECT r.id FROM mbus.read_next('hh', 1, NULL) AS r,
        LATERAL (SELECT mbus.commit('hh', r.cursor)) AS c""",
    """SELECT pg_total_relation_size('mbus.stream_cursors')
        + (SELECT sum(pg_total_relation_size(relid))::bigint
           FROM pg_partition_tree('mbus.events'::regclass))""",
    """SELECT r.id FROM mbus.read_next('hh', 500, NULL) AS r,
        LATERAL (SELECT mbus.commit('hh', r.cursor)) AS c""",
)
BY_NAME = {s.name: s for s in (PGMBUS, PGMQ, RAW, STREAM)}


@dataclass
class Run:
    """What the threads of one side's run share: counts, claim timings, claimed ids."""

    stop_posting: threading.Event = field(default_factory=threading.Event)
    draining: threading.Event = field(default_factory=threading.Event)
    stop_claiming: threading.Event = field(default_factory=threading.Event)
    posted: int = 0
    claims: list[tuple[float, float]] = field(default_factory=list)  # (end, seconds)
    ids: list[int] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)


def _connect(dsn: str, autocommit: bool = True) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=autocommit, options="-c synchronous_commit=off")


def _producer(dsn: str, side: Side, rate: int, run: Run) -> None:
    try:
        with _connect(dsn) as conn:
            start = time.monotonic()
            n = 0
            while not run.stop_posting.is_set():
                due = int((time.monotonic() - start) * rate) - run.posted
                if due > 0:
                    batch = [Jsonb({"n": n + k, "body": "x" * 100}) for k in range(due)]
                    conn.execute(side.post_sql, (batch,))
                    n += due
                    run.posted += due
                time.sleep(TICK)
    except BaseException as exc:
        run.errors.append(exc)


def _consumer(dsn: str, side: Side, run: Run) -> None:
    try:
        with _connect(dsn) as conn:
            while not run.stop_claiming.is_set():
                if run.draining.is_set():
                    rows = conn.execute(side.drain_sql).fetchall()
                    run.ids.extend(r[0] for r in rows)
                    if not rows:
                        time.sleep(0.01)
                    continue
                t0 = time.monotonic()
                rows = conn.execute(side.claim_sql).fetchall()
                t1 = time.monotonic()
                if rows:
                    run.claims.append((t1, t1 - t0))
                    run.ids.extend(r[0] for r in rows)
                else:
                    time.sleep(0.001)
    except BaseException as exc:
        run.errors.append(exc)


def _hold(dsn: str, held: threading.Event, release: threading.Event) -> None:
    """Hold the xmin horizon: a REPEATABLE READ transaction with its snapshot taken."""
    with psycopg.connect(dsn) as conn:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        conn.execute("SELECT count(*) FROM pg_class")
        held.set()
        release.wait()
        conn.rollback()


def _load() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def _window(run: Run, t0: float, t1: float, phase: str, size: int) -> dict[str, Any]:
    times = [s for end, s in run.claims if t0 <= end < t1]
    return {
        "phase": phase,
        "t_s": round(t1 - t0, 1),
        "claims_per_s": round(len(times) / (t1 - t0), 1),
        "claim_ms_mean": round(1000 * statistics.fmean(times), 3) if times else None,
        "claim_ms_p99": round(1000 * percentile(times, 0.99), 3) if times else None,
        "backlog": run.posted - len(run.ids),
        "mb": round(size / 2**20, 2),
        "load_1m": _load(),
    }


def run_side(
    dsn: str, side: Side, rate: int, opts: Options, say: Callable[[str], None]
) -> dict[str, Any]:
    with _connect(dsn) as conn:
        for stmt in side.setup_sql:
            conn.execute(stmt)
        if side is PGMBUS and opts.rotate_bytes:
            conn.execute(
                "UPDATE mbus.queue_segment SET rotate_bytes = %s WHERE qname = 'hh'",
                (opts.rotate_bytes,),
            )
    run = Run()
    threads = [threading.Thread(target=_producer, args=(dsn, side, rate, run), daemon=True)]
    threads += [
        threading.Thread(target=_consumer, args=(dsn, side, run), daemon=True)
        for _ in range(opts.consumers)
    ]
    held, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold, args=(dsn, held, release), daemon=True)
    try:
        return _measure(dsn, side, rate, opts, say, run, threads, (holder, held, release))
    finally:  # whatever happened, no thread outlives the run
        release.set()
        run.stop_posting.set()
        run.stop_claiming.set()


def _measure(
    dsn: str,
    side: Side,
    rate: int,
    opts: Options,
    say: Callable[[str], None],
    run: Run,
    threads: list[threading.Thread],
    hold: tuple[threading.Thread, threading.Event, threading.Event],
) -> dict[str, Any]:
    holder, held, release = hold
    held_windows = max(1, round(opts.minutes * 60 / opts.window))
    plan = ["warm"] * opts.warm + ["held"] * held_windows + ["after"] * opts.after
    windows: list[dict[str, Any]] = []
    for t in threads:
        t.start()
    with _connect(dsn) as mon:
        start = time.monotonic()
        for i, phase in enumerate(plan):
            if phase == "held" and not holder.is_alive() and not held.is_set():
                holder.start()
                held.wait()
            if phase == "after" and not release.is_set():
                release.set()
                holder.join()
            t0 = time.monotonic()
            time.sleep(max(0.0, start + (i + 1) * opts.window - t0))
            size = mon.execute(side.size_sql).fetchone()[0]  # type: ignore[index]
            windows.append(_window(run, t0, time.monotonic(), phase, size))
            w = windows[-1]
            say(
                f"  {side.name} {rate}/s {phase:5} {i + 1}/{len(plan)}: "
                f"{w['claims_per_s']:,.0f}/s, {w['claim_ms_mean']} ms, "
                f"backlog {w['backlog']:,}, {w['mb']} MB"
            )
            if run.errors:
                break
        release.set()
        run.stop_posting.set()
        threads[0].join()
        run.draining.set()
        drain_start = time.monotonic()
        while len(run.ids) < run.posted and not run.errors:
            if time.monotonic() - drain_start > 60 + run.posted / 1000:
                break
            time.sleep(0.05)
        run.stop_claiming.set()
        for t in threads[1:]:
            t.join()
        end_size = mon.execute(side.size_sql).fetchone()[0]  # type: ignore[index]
    if holder.is_alive():
        holder.join()
    if run.errors:
        raise run.errors[0]
    return _summary(side.name, rate, windows, run, opts, end_size)


def _summary(
    side: str, rate: int, windows: list[dict[str, Any]], run: Run, opts: Options, end: int
) -> dict[str, Any]:
    warm = [w for w in windows if w["phase"] == "warm"]
    held = [w for w in windows if w["phase"] == "held"]
    at = min(len(held) - 1, max(0, round(AT_MINUTE * 60 / opts.window) - 1))
    unheld = statistics.fmean(w["claims_per_s"] for w in warm) if warm else 0.0
    worst = min(w["claims_per_s"] for w in held)
    return {
        "side": side,
        "rate": rate,
        "windows": windows,
        "unheld_per_s": round(unheld, 1),
        "held_at_minute": round((at + 1) * opts.window / 60, 2),
        "held_per_s": held[at]["claims_per_s"],
        "held_claim_ms": held[at]["claim_ms_mean"],
        "held_ratio": round(held[at]["claims_per_s"] / unheld, 3) if unheld else 0.0,
        "held_min_ratio": round(worst / unheld, 3) if unheld else 0.0,
        "mb_before": warm[-1]["mb"] if warm else windows[0]["mb"],
        "mb_peak": max(w["mb"] for w in windows),
        "mb_end": round(end / 2**20, 2),
        "posted": run.posted,
        "lost": run.posted - len(set(run.ids)),
        "duplicates": len(run.ids) - len(set(run.ids)),
    }


def _install_pgmq(dsn: str, script: Path) -> None:
    argv = [str(find_bindir() / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(script)]
    proc = subprocess.run([*argv, dsn], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"installing PGMQ from {script} failed: {proc.stderr[-1000:]}")


def options(args: argparse.Namespace) -> Options:
    sides = tuple(s.strip() for s in args.sides.split(",")) if args.sides else SIDES
    unknown = set(sides) - set(SIDES)
    if unknown:
        raise SystemExit(f"held_horizon: unknown sides {sorted(unknown)}; known: {SIDES}")
    return Options(
        minutes=args.minutes,
        window=args.window,
        rates=tuple(int(r) for r in args.rates.split(",")),
        warm=args.warm_windows,
        after=args.after_windows,
        consumers=args.consumers,
        sides=sides,
        rotate_bytes=args.rotate_bytes,
        pgmq_sql=args.pgmq_sql,
    )


def run_report(
    args: argparse.Namespace, admin_dsn: str, progress: Callable[[str], None]
) -> dict[str, Any]:
    if args.backlogs:
        return _claim_backlog.run_report(args, admin_dsn, progress)
    opts = options(args)
    results: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for rate in opts.rates:
        for side_name in opts.sides:
            if side_name == "pgmq" and (opts.pgmq_sql is None or not opts.pgmq_sql.is_file()):
                skipped["pgmq"] = "needs its install script: --pgmq-sql PATH"
                continue
            progress(f"[bold]held_horizon[/]: {side_name} at {rate}/s")
            with scratch_database(admin_dsn, f"pgmbus_bench_held_horizon_{os.getpid()}") as dsn:
                if side_name == "pgmq":
                    assert opts.pgmq_sql is not None
                    _install_pgmq(dsn, opts.pgmq_sql)
                results.append(run_side(dsn, BY_NAME[side_name], rate, opts, progress))
    for r in results:
        mine = next((p for p in results if p["side"] == "pgmbus" and p["rate"] == r["rate"]), None)
        if mine and r["side"] != "pgmbus" and r["held_per_s"]:
            r["pgmbus_to_side_held"] = round(mine["held_per_s"] / r["held_per_s"], 2)
    return {
        "scenario": name,
        "rotate_bytes": opts.rotate_bytes,
        "minutes": opts.minutes,
        "window_s": opts.window,
        "consumers": opts.consumers,
        "sides": results,
        "skipped": skipped,
    }


def render(report: dict[str, Any]) -> None:
    if report["scenario"] == _claim_backlog.name:
        _claim_backlog.render(report)
        return
    table = Table(
        "side", "offered /s", "unheld /s", "held /s", "held/unheld", "worst/unheld",
        "claim ms", "pgmbus/side", "MB before", "MB peak", "MB end", "lost", "dup",
        title=(
            f"held_horizon: horizon held {report['minutes']} min, "
            f"{report['window_s']} s windows (held column: minute 8 or the last held window)"
        ),
    )  # fmt: skip
    for r in report["sides"]:
        table.add_row(
            r["side"],
            str(r["rate"]),
            f"{r['unheld_per_s']:,.0f}",
            f"{r['held_per_s']:,.0f}",
            f"{r['held_ratio']:.2f}x",
            f"{r['held_min_ratio']:.2f}x",
            str(r["held_claim_ms"]),
            f"{r['pgmbus_to_side_held']:.2f}x" if "pgmbus_to_side_held" in r else "",
            f"{r['mb_before']}",
            f"{r['mb_peak']}",
            f"{r['mb_end']}",
            str(r["lost"]),
            str(r["duplicates"]),
        )
    Console(width=200).print(table)
