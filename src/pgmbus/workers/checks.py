"""Before a worker starts: every queue, consumer and stream group it reads exists.

A worker does not create what it reads (docs/workers.md). Unchecked, a missing queue would
surface as a handler loop dying with a logged traceback; here it is one line naming each
missing object and the command that creates it, and the worker does not start.
"""

from __future__ import annotations

from collections.abc import Iterable

import psycopg

from pgmbus.data.queues import queue_exists, require_consumer
from pgmbus.data.streams import group_exists
from pgmbus.errors import NotFound


def missing_objects(
    conn: psycopg.Connection[tuple[object, ...]],
    consumers: Iterable[tuple[str, str]],
    groups: Iterable[str] = (),
) -> list[str]:
    """One phrase per missing queue, consumer or group: what is missing and how to create it."""
    problems: list[str] = []
    for queue, consumer in dict.fromkeys(consumers):
        if not queue_exists(conn, queue):
            fix = f"pgmbus queue create {queue}"
            if consumer != "default":
                fix += f" && pgmbus queue create-consumer {queue} {consumer}"
            problems.append(f"queue {queue!r} does not exist (create it: `{fix}`)")
            continue
        try:
            require_consumer(conn, queue, consumer)
        except NotFound as exc:
            problems.append(f"{exc} (create it: `pgmbus queue create-consumer {queue} {consumer}`)")
    for group in dict.fromkeys(groups):
        if not group_exists(conn, group):
            problems.append(
                f"consumer group {group!r} does not exist "
                f"(create it: `pgmbus streams create-group {group}`)"
            )
    return problems


def require_objects(
    conn: psycopg.Connection[tuple[object, ...]],
    consumers: Iterable[tuple[str, str]],
    groups: Iterable[str] = (),
) -> None:
    """Raise ``NotFound`` (MB002) naming every missing object and its fix, in one message."""
    problems = missing_objects(conn, consumers, groups)
    if problems:
        raise NotFound(
            "the worker cannot start: " + "; ".join(problems) + " (a worker creates none of them)",
            sqlstate="MB002",
        )
