"""Before a worker starts: every queue, consumer and stream group it reads exists.

A worker does not create what it reads (docs/workers.md). Unchecked, a missing queue would
surface as a handler loop dying with a logged traceback; here it is one line naming each
missing object and the command that creates it, and the worker does not start.
"""

from __future__ import annotations

from collections.abc import Iterable

import psycopg

from pgmbus.cli.common import connect
from pgmbus.errors import NotFound, translating
from pgmbus.sqlfiles import load_queries


def missing_objects(
    conn: psycopg.Connection[tuple[object, ...]],
    consumers: Iterable[tuple[str, str]],
    groups: Iterable[str] = (),
) -> list[str]:
    """One phrase per missing queue, consumer or group: what is missing and how to create it."""
    queries = load_queries("queues.sql")
    problems: list[str] = []
    for queue, consumer in dict.fromkeys(consumers):
        with translating():
            queue_row = conn.execute(queries["queue_exists"], {"queue": queue}).fetchone()
        if not queue_row or not queue_row[0]:
            fix = f"pgmbus queue create {queue}"
            if consumer != "default":
                fix += f" && pgmbus queue create-consumer {queue} {consumer}"
            problems.append(f"queue {queue!r} does not exist (create it: `{fix}`)")
            continue
        try:
            with translating():
                conn.execute(queries["require_consumer"], {"queue": queue, "consumer": consumer})
        except NotFound as exc:
            problems.append(f"{exc} (create it: `pgmbus queue create-consumer {queue} {consumer}`)")
    group_query = load_queries("http.sql")["stream_groups"]
    for group in dict.fromkeys(groups):
        with translating():
            found = conn.execute(group_query, {"group": group}).fetchall()
        if not found:
            problems.append(
                f"consumer group {group!r} does not exist "
                f"(create it: `pgmbus streams create-group {group}`)"
            )
    return problems


def require_worker_objects(
    dsn: str, consumers: Iterable[tuple[str, str]], groups: Iterable[str] = ()
) -> None:
    """Raise ``NotFound`` (MB002) naming every missing object and its fix, in one message."""
    with connect(dsn) as conn:
        problems = missing_objects(conn, consumers, groups)
    if problems:
        raise NotFound(
            "the worker cannot start: " + "; ".join(problems) + " (a worker creates none of them)",
            sqlstate="MB002",
        )
