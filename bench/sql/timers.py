"""The timer paths: create 1 per transaction and 100 per call, then claim + record 100.

The floor is a raw table with what a due-time claim needs; pgmbus adds the change log, the
retry policy, bucket leases and the attempts history (each has a price, measured here).
"""

from __future__ import annotations

from bench.sql.model import PathSpec, Side, with_reference

SQLFILE = "timers.sql"


def _raw(path: str, per_tx: int = 1, **kw: str) -> Side:
    fill = ("raw_fill",) if kw.get("backlog") else ()
    return Side(
        "raw",
        "plain",
        f"{path}_raw.sql",
        per_tx=per_tx,
        prepare=("raw_timers",),
        defines="raw_defines",
        backlog=kw.get("backlog"),
        fill=fill,
        fill_chunk=10_000,
    )


def _mbus(path: str, per_tx: int = 1, **kw: str) -> Side:
    fill = ("mbus_fill",) if kw.get("backlog") else ()
    return Side(
        "pgmbus",
        "mbus",
        f"{path}_pgmbus.sql",
        per_tx=per_tx,
        defines="mbus_defines",
        backlog=kw.get("backlog"),
        fill=fill,
        fill_chunk=10_000,
    )


PATHS: tuple[PathSpec, ...] = (
    PathSpec("create1", "create 1 timer per transaction", (_raw("create1"), _mbus("create1"))),
    PathSpec(
        "create100",
        "create 100 timers per call",
        (_raw("create100", 100), _mbus("create100", 100)),
        sync=(True,),
    ),
    PathSpec(
        "claim",
        "claim 100 due timers, then record them",
        (_raw("claim", 100, backlog="raw_backlog"), _mbus("claim", 100, backlog="mbus_backlog")),
        sync=(True,),
        guess_per_client=15_000,
    ),
)

PATHS = with_reference(PATHS)
