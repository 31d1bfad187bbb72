"""Run pgbench paths side by side: fresh databases, pre-fills, interleaved rounds, medians.

For every path, every side gets a fresh database (a copy of its engine's template). Then for
each client count and ``synchronous_commit`` mode the sides run ``rounds`` times, in
alternating order (A B C, C B A, ...), each run preceded by a ``CHECKPOINT`` (and, on consume
paths, by a top-up of the backlog and a ``VACUUM``) so that every run starts alike. A run's
messages are pgbench's transactions times the messages per script on post paths, and the drop
of the backlog on consume paths; its CPU is the whole server's (``/proc``), its WAL the
insert-position difference. Medians per side, then ratios between sides.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from bench.sql import engines, pgbench
from bench.sql.model import PAYLOAD, SCRIPTS, Options, PathSpec, Side, queries
from bench.sql.server import BenchServer, children

Progress = Callable[[str], None]
MAX_BACKLOG = 4_000_000


@dataclass
class Sample:
    """One pgbench run of one side."""

    messages: int
    seconds: float
    cpu_seconds: float
    wal_bytes: int
    latency_ms: float
    drained: bool

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Row:
    """The medians of one side on one path at one client count and commit mode."""

    path: str
    title: str
    side: str
    clients: int = 0
    sync: bool = True
    note: str = ""
    skipped: str | None = None
    samples: list[Sample] = field(default_factory=list)
    ratios: dict[str, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return statistics.median(s.rate for s in self.samples) if self.samples else 0.0

    @property
    def cpu_us_per_msg(self) -> float:
        return (
            statistics.median(s.cpu_seconds * 1e6 / s.messages for s in self.samples if s.messages)
            if any(s.messages for s in self.samples)
            else 0.0
        )

    @property
    def wal_bytes_per_msg(self) -> float:
        return (
            statistics.median(s.wal_bytes / s.messages for s in self.samples if s.messages)
            if any(s.messages for s in self.samples)
            else 0.0
        )

    @property
    def latency_ms(self) -> float:
        return statistics.median(s.latency_ms for s in self.samples) if self.samples else 0.0

    def as_dict(self) -> dict[str, Any]:
        if self.skipped is not None:
            return {"path": self.path, "side": self.side, "skipped": self.skipped}
        return {
            "path": self.path,
            "side": self.side,
            "clients": self.clients,
            "synchronous_commit": "on" if self.sync else "off",
            "messages_per_s": round(self.rate, 1),
            "server_cpu_us_per_msg": round(self.cpu_us_per_msg, 2),
            "wal_bytes_per_msg": round(self.wal_bytes_per_msg, 1),
            "latency_ms": round(self.latency_ms, 3),
            "ratios": {k: round(v, 3) for k, v in self.ratios.items()},
            "rates": [round(s.rate, 1) for s in self.samples],
            "drained": any(s.drained for s in self.samples),
            "note": self.note,
        }


@dataclass
class SqlReport:
    """Every row of one scenario run, with the machine's load around it."""

    scenario: str
    options: dict[str, Any]
    rows: list[Row]
    loadavg_before: str
    loadavg_after: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "options": self.options,
            "loadavg_before": self.loadavg_before,
            "loadavg_after": self.loadavg_after,
            "rows": [r.as_dict() for r in self.rows],
        }


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


class _SideState:
    """A side's database on the current path and what the runner learnt about it."""

    def __init__(self, side: Side, db: str, dsn: str, defines: dict[str, str]) -> None:
        self.side = side
        self.db = db
        self.dsn = dsn
        self.defines = defines


class Runner:
    """Runs the paths of one scenario on one server."""

    def __init__(
        self, scenario: str, sqlfile: str, server: BenchServer, opts: Options, progress: Progress
    ) -> None:
        self.scenario = scenario
        self.q = queries(sqlfile)
        self.server = server
        self.opts = opts
        self.progress = progress
        self.pgbench_bin = server.bindir / "pgbench"
        self._templates: dict[str, str] = {}
        # the best rate per client seen for (path, side, synchronous_commit): sizes the backlog
        # (a rate learnt with sync on would leave a sync off run without messages)
        self._per_client: dict[tuple[str, str, bool], float] = {}

    def close(self) -> None:
        """Drop the engines' template databases."""
        for name in self._templates.values():
            self.server.drop_database(name)
        self._templates.clear()

    # --- databases ------------------------------------------------------------------------------
    def _template(self, engine: str) -> str:
        if engine not in self._templates:
            name = f"sqlb_tpl_{engine}"
            dsn = self.server.create_database(name)
            engines.install(engine, dsn, self.server, self.opts)
            self._templates[engine] = name
        return self._templates[engine]

    def _open_side(self, path: PathSpec, side: Side) -> _SideState:
        db = f"sqlb_{path.name}_{side.name}".replace("-", "_")
        dsn = self.server.create_database(db, template=self._template(side.engine))
        defines = {"payload": PAYLOAD}
        with psycopg.connect(dsn, autocommit=True) as conn:
            for block in side.prepare:
                conn.execute(self.q[block])
            if side.defines:
                cur = conn.execute(self.q[side.defines])
                row = cur.fetchone()
                assert row is not None and cur.description is not None
                defines.update({c.name: str(v) for c, v in zip(cur.description, row, strict=True)})
        return _SideState(side, db, dsn, defines)

    # --- backlog --------------------------------------------------------------------------------
    def _backlog(self, st: _SideState) -> int:
        assert st.side.backlog is not None
        with psycopg.connect(st.dsn, autocommit=True) as conn:
            row = conn.execute(self.q[st.side.backlog]).fetchone()
        return int(str(row[0])) if row and row[0] is not None else 0

    def _target(self, path: PathSpec, side: Side, clients: int, sync: bool) -> int:
        if self.opts.transactions is not None:
            return self.opts.transactions * clients * side.per_tx + 10 * side.per_tx
        per_client = self._per_client.get((path.name, side.name, sync), path.guess_per_client)
        return min(
            MAX_BACKLOG, int(1.5 * per_client * clients * self.opts.seconds) + 10 * side.per_tx
        )

    def _top_up(self, path: PathSpec, st: _SideState, clients: int, sync: bool) -> None:
        target = self._target(path, st.side, clients, sync)
        missing = target - self._backlog(st)
        with psycopg.connect(st.dsn, autocommit=True) as conn:
            while missing > 0:
                n = min(missing, st.side.fill_chunk)
                for block in st.side.fill:
                    conn.execute(self.q[block], {"n": n, **st.defines})
                missing -= n
            conn.execute("VACUUM (ANALYZE)")

    # --- one run --------------------------------------------------------------------------------
    def _run_once(self, path: PathSpec, st: _SideState, clients: int, sync: bool) -> Sample:
        side = st.side
        if side.backlog:
            self._top_up(path, st, clients, sync)
            before_backlog = self._backlog(st)
        self.server.checkpoint()
        kids = children(self.server.postmaster_pid)
        before = self.server.counters()
        result = pgbench.run(
            self.pgbench_bin,
            self.server.libpq_args(st.db),
            SCRIPTS / side.script,
            clients=clients,
            seconds=self.opts.seconds,
            transactions=self.opts.transactions,
            sync=sync,
            defines=st.defines,
        )
        self.server.settle(kids)
        after = self.server.counters()
        drained = False
        if side.backlog:
            after_backlog = self._backlog(st)
            messages = before_backlog - after_backlog
            drained = after_backlog == 0
        else:
            messages = result.transactions * side.per_tx
        sample = Sample(
            messages=messages,
            seconds=result.seconds,
            cpu_seconds=after.cpu_seconds - before.cpu_seconds,
            wal_bytes=self.server.wal_bytes(before, after),
            latency_ms=result.latency_ms,
            drained=drained,
        )
        key = (path.name, side.name, sync)
        self._per_client[key] = max(self._per_client.get(key, 0.0), sample.rate / clients)
        return sample

    # --- a path ---------------------------------------------------------------------------------
    def run_path(self, path: PathSpec) -> list[Row]:
        rows: list[Row] = []
        live: list[Side] = []
        for side in path.sides:
            if self.opts.sides is not None and side.name not in self.opts.sides:
                continue
            reason = engines.unavailable(side.engine, self.server, self.opts)
            if reason is None:
                live.append(side)
            else:
                self.progress(f"{path.name}/{side.name}: skipped ({reason})")
                rows.append(Row(path.name, path.title, side.name, note=side.note, skipped=reason))
        states = [self._open_side(path, side) for side in live]
        clients_list = [
            c for c in self.opts.clients if path.max_clients is None or c <= path.max_clients
        ] or [1]
        modes = [m for m in path.sync if self.opts.sync is None or m in self.opts.sync]
        modes = modes or list(path.sync[:1])  # a path measured in one mode only keeps it
        failed: dict[str, str] = {}
        try:
            for clients in clients_list:
                for sync in modes:
                    got: dict[str, list[Sample]] = {st.side.name: [] for st in states}
                    for r in range(self.opts.rounds):
                        order = states if r % 2 == 0 else list(reversed(states))
                        for st in order:
                            if st.side.name in failed:
                                continue
                            try:
                                sample = self._run_once(path, st, clients, sync)
                            except pgbench.PgbenchError as exc:
                                # one side's failure is its row's, not the whole report's
                                failed[st.side.name] = str(exc).splitlines()[0]
                                self.progress(f"{path.name}/{st.side.name}: FAILED {exc}")
                                continue
                            got[st.side.name].append(sample)
                            self.progress(
                                f"{path.name} c={clients} sync={'on' if sync else 'off'} "
                                f"round {r + 1}/{self.opts.rounds} {st.side.name}: "
                                f"{sample.rate:,.0f} msg/s, "
                                f"{sample.cpu_seconds * 1e6 / max(sample.messages, 1):.1f} us CPU"
                                f"/msg, {sample.wal_bytes / max(sample.messages, 1):.0f} B WAL/msg"
                                + (" (DRAINED)" if sample.drained else "")
                            )
                    group = [
                        Row(
                            path.name,
                            path.title,
                            st.side.name,
                            clients,
                            sync,
                            st.side.note,
                            skipped=None if got[st.side.name] else failed.get(st.side.name),
                            samples=got[st.side.name],
                        )
                        for st in states
                    ]
                    for row in group:
                        row.ratios = {
                            other.side: row.rate / other.rate
                            for other in group
                            if other is not row and other.rate > 0
                        }
                    rows.extend(group)
        finally:
            for st in states:
                self.server.drop_database(st.db)
        return rows


def run(
    scenario: str,
    sqlfile: str,
    paths: tuple[PathSpec, ...],
    opts: Options,
    progress: Progress = lambda _msg: None,
    server: BenchServer | None = None,
) -> SqlReport:
    """Run ``paths`` (all, or those named in ``opts.paths``) on ``server`` or a fresh one."""
    if opts.paths:
        unknown = set(opts.paths) - {p.name for p in paths}
        if unknown:
            raise SystemExit(f"unknown path(s) {sorted(unknown)}; known: {[p.name for p in paths]}")
    chosen = [p for p in paths if not opts.paths or p.name in opts.paths]
    report = SqlReport(
        scenario,
        {
            "clients": list(opts.clients),
            "sync": None if opts.sync is None else ["on" if s else "off" for s in opts.sync],
            "rounds": opts.rounds,
            "seconds": opts.seconds,
            "transactions": opts.transactions,
            "durable": opts.durable,
            "payload_bytes": len(PAYLOAD.encode()),
        },
        [],
        loadavg(),
    )
    own = server is None
    srv = server if server is not None else BenchServer(durable=opts.durable).start()
    try:
        runner = Runner(scenario, sqlfile, srv, opts, progress)
        started = time.monotonic()
        try:
            for path in chosen:
                report.rows.extend(runner.run_path(path))
        finally:
            runner.close()
        report.options["wall_seconds"] = round(time.monotonic() - started, 1)
    finally:
        if own:
            srv.stop()
    report.loadavg_after = loadavg()
    return report
