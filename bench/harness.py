"""The benchmark harness: scenarios, rounds, medians, ratios, a table and JSON.

A scenario measures the same unit of work twice in one run: through pgmbus (the candidate) and
through the plainest SQL that does the same (the baseline). Both run for several rounds,
interleaved so that machine noise hits both alike; the report gives each side's median rate and
the ratio candidate/baseline. Goals are stated as ratios, never as absolute times.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from pgmbus import schema


@dataclass
class Measurement:
    """One timed run of one side: ``units`` of work in ``seconds``."""

    units: int
    seconds: float
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.units / self.seconds if self.seconds > 0 else float("inf")


class Scenario(Protocol):
    """What a module in ``bench/scenarios`` provides (as module-level names)."""

    name: str
    unit: str
    goal: str

    def setup(self, dsn: str, size: int) -> None: ...
    def candidate(self, dsn: str, size: int) -> Measurement: ...
    def baseline(self, dsn: str, size: int) -> Measurement: ...


@dataclass
class SideResult:
    rates: list[float]
    extras: list[dict[str, float]]

    @property
    def median(self) -> float:
        return statistics.median(self.rates)

    def extra_medians(self) -> dict[str, float]:
        keys = {k for e in self.extras for k in e}
        return {k: statistics.median(e[k] for e in self.extras if k in e) for k in sorted(keys)}


@dataclass
class Report:
    scenario: str
    unit: str
    goal: str
    size: int
    rounds: int
    candidate: SideResult
    baseline: SideResult

    @property
    def ratio(self) -> float:
        return self.candidate.median / self.baseline.median if self.baseline.median else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "unit": self.unit,
            "goal": self.goal,
            "size": self.size,
            "rounds": self.rounds,
            "candidate_median_per_s": round(self.candidate.median, 1),
            "baseline_median_per_s": round(self.baseline.median, 1),
            "ratio": round(self.ratio, 3),
            "candidate_rates": [round(r, 1) for r in self.candidate.rates],
            "baseline_rates": [round(r, 1) for r in self.baseline.rates],
            "candidate_extra": self.candidate.extra_medians(),
            "baseline_extra": self.baseline.extra_medians(),
        }


def scenario_names() -> list[str]:
    """The scenarios available in ``bench/scenarios``."""
    import bench.scenarios as pkg

    return sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_"))


def load(name: str) -> Any:
    """Import ``bench.scenarios.<name>`` (it must define the ``Scenario`` names)."""
    if name not in scenario_names():
        raise SystemExit(f"unknown scenario {name!r}; known: {', '.join(scenario_names())}")
    return importlib.import_module(f"bench.scenarios.{name}")


@contextmanager
def scratch_database(admin_dsn: str, name: str) -> Iterator[str]:
    """A fresh database with the mbus schema for one scenario run; dropped afterwards."""
    ident = sql.Identifier(name)
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(ident))
    dsn = make_conninfo(admin_dsn, dbname=name)
    try:
        with psycopg.connect(dsn) as conn:
            schema.install(conn)
        yield dsn
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))


def run(
    scenario: Any,
    admin_dsn: str,
    *,
    size: int,
    rounds: int,
    progress: Callable[[str], None] = lambda _msg: None,
) -> Report:
    """Run a scenario: setup, then ``rounds`` of candidate and baseline, alternating order."""
    candidate = SideResult([], [])
    baseline = SideResult([], [])
    with scratch_database(admin_dsn, f"pgmbus_bench_{scenario.name}") as dsn:
        scenario.setup(dsn, size)
        for i in range(rounds):
            sides: list[tuple[str, Callable[[str, int], Measurement], SideResult]] = [
                ("candidate", scenario.candidate, candidate),
                ("baseline", scenario.baseline, baseline),
            ]
            if i % 2:
                sides.reverse()
            for label, func, result in sides:
                m = func(dsn, size)
                result.rates.append(m.rate)
                result.extras.append(m.extra)
                progress(f"round {i + 1}/{rounds} {label}: {m.rate:,.0f} {scenario.unit}/s")
    return Report(scenario.name, scenario.unit, scenario.goal, size, rounds, candidate, baseline)


def timed(units: int, func: Callable[[], None]) -> Measurement:
    """Time ``func`` (which does ``units`` of work) with a monotonic clock."""
    start = time.perf_counter()
    func()
    return Measurement(units, time.perf_counter() - start)


def to_json(reports: list[Report]) -> str:
    return json.dumps([r.as_dict() for r in reports], indent=2)


__all__ = ["Measurement", "Report", "asdict", "load", "run", "scenario_names", "timed", "to_json"]
