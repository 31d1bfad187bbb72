"""The queue paths: post, pop, lease + ack, and batches of 100, for every queue engine.

Raw SQL is the floor (``INSERT``; ``DELETE ... WHERE id = (SELECT ... FOR UPDATE SKIP
LOCKED)``); PGMQ runs only with ``--pgmq-sql``. PgQueuer and procrastinate take and finish a job
in two transactions, so they sit on the lease + ack path (and PgQueuer on the batch consume),
not on pop.
"""

from __future__ import annotations

import dataclasses

from bench.sql.model import PathSpec, Side, with_reference

SQLFILE = "queues.sql"

_RAW = Side("raw", "plain", "", prepare=("raw_table",))
_MBUS = Side("pgmbus", "mbus", "", prepare=("mbus_queue",))
_PGMQ = Side("pgmq", "pgmq", "", prepare=("pgmq_queue",))
_PGQUEUER = Side("pgqueuer", "pgqueuer", "", defines="pgqueuer_defines")
_PROCRASTINATE = Side("procrastinate", "procrastinate", "", defines="procrastinate_defines")


def _post(base: Side, path: str, per_tx: int) -> Side:
    return Side(
        base.name,
        base.engine,
        f"{path}_{base.name}.sql",
        per_tx=per_tx,
        prepare=base.prepare,
        defines=base.defines,
    )


def _take(
    base: Side,
    path: str,
    per_tx: int,
    fill: str,
    backlog: str,
    prepare: tuple[str, ...] | None = None,
) -> Side:
    return Side(
        base.name,
        base.engine,
        f"{path}_{base.name}.sql",
        per_tx=per_tx,
        prepare=base.prepare if prepare is None else prepare,
        defines=base.defines,
        backlog=backlog,
        fill=(fill,),
    )


_RAW_LEASE = ("raw_lease_table", "raw_lease_index")


def _prio(path: str) -> Side:
    """pgmbus's script on a queue whose messages carry priorities 0..3 (a flagged queue)."""
    return dataclasses.replace(
        _take(_MBUS, path, 1, "mbus_prio_fill", "mbus_backlog"),
        name="pgmbus-prio",
        fill_chunk=20_000,
        note="messages with priorities 0..3",
    )


PATHS: tuple[PathSpec, ...] = (
    PathSpec(
        "post1",
        "post 1 message per transaction",
        tuple(_post(s, "post1", 1) for s in (_RAW, _MBUS, _PGMQ, _PGQUEUER, _PROCRASTINATE)),
    ),
    PathSpec(
        "pop",
        "consume 1 message per transaction",
        (
            _take(_RAW, "pop", 1, "raw_fill", "raw_backlog"),
            _take(_MBUS, "pop", 1, "mbus_fill", "mbus_backlog"),
            _prio("pop"),
            _take(_PGMQ, "pop", 1, "pgmq_fill", "pgmq_backlog"),
        ),
        guess_per_client=12_000,
    ),
    PathSpec(
        "lease",
        "lease 1 message, then ack it (two transactions)",
        (
            _take(_RAW, "lease", 1, "raw_lease_fill", "raw_lease_backlog", prepare=_RAW_LEASE),
            _take(_MBUS, "lease", 1, "mbus_fill", "mbus_backlog"),
            _prio("lease"),
            _take(_PGMQ, "lease", 1, "pgmq_fill", "pgmq_backlog"),
            _take(_PGQUEUER, "lease", 1, "pgqueuer_fill", "pgqueuer_backlog"),
            _take(_PROCRASTINATE, "lease", 1, "procrastinate_fill", "procrastinate_backlog"),
        ),
        guess_per_client=6_000,
    ),
    PathSpec(
        "post1iid",
        "post 1 message with a client iid (idempotent within queues.iid_window) per transaction",
        tuple(_post(s, "post1iid", 1) for s in (_RAW, _MBUS)),
        sync=(True,),
    ),
    PathSpec(
        "post1h",
        "post 1 message with headers (a trace id, a seenby list) per transaction",
        tuple(_post(s, "post1h", 1) for s in (_RAW, _MBUS)),
    ),
    PathSpec(
        "dep",
        "a consume_after cycle: post, post a message waiting for it, consume both"
        " (2 messages, 4 transactions)",
        (
            _post(_RAW, "dep", 2),
            _post(_MBUS, "dep", 2),
            dataclasses.replace(
                _post(_MBUS, "dep", 2),
                name="pgmbus-free",
                script="dep_pgmbus-free.sql",
                note="the same without consume_after",
            ),
        ),
    ),
    PathSpec(
        "post100",
        "post 100 messages per call",
        tuple(_post(s, "post100", 100) for s in (_RAW, _MBUS, _PGMQ, _PGQUEUER, _PROCRASTINATE)),
    ),
    PathSpec(
        "consume100",
        "consume 100 messages per call",
        (
            _take(_RAW, "consume100", 100, "raw_fill", "raw_backlog"),
            _take(_MBUS, "consume100", 100, "mbus_fill", "mbus_backlog"),
            _take(_PGMQ, "consume100", 100, "pgmq_fill", "pgmq_backlog"),
            _take(_PGQUEUER, "consume100", 100, "pgqueuer_fill", "pgqueuer_backlog"),
        ),
        sync=(True,),
        guess_per_client=40_000,
    ),
)

PATHS = with_reference(PATHS)
