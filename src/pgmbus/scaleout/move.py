"""Move a queue to another server of the map, draining the old one exactly once."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import psycopg

from pgmbus import args
from pgmbus.data.scaleout import SCALEOUT as _Q
from pgmbus.errors import InvalidState, NotFound, TimeoutExpired, translating
from pgmbus.scaleout.placement import Cluster


@dataclass
class MoveReport:
    """What a move did: batches and messages moved, re-sent ones the new server skipped."""

    queue: str
    source: str
    target: str
    batches: int = 0
    moved: int = 0
    duplicate: int = 0
    by_another: bool = False  # a move of the same queue running at once did it; this one waited


def move_queue(
    home: str,
    queue: str,
    server: str,
    *,
    batch: int = 500,
    grace: float | None = None,
    wait: float = 30.0,
) -> MoveReport:
    """Move ``queue`` to ``server``: redirect posts, drain the old server, then switch the map.

    1. checks (nothing changes when one fails): the server is in the map, the queue is placed
       elsewhere, it exists on its server with exactly one consumer (a queue's deliveries are
       per consumer; one consumer is what a move can carry without copying a message twice);
    2. makes the queue and its consumer on the new server when missing (and drops it again
       when the next step fails: a move that never began leaves nothing behind);
    3. ``mbus.begin_move`` on the home database: clients of the map now post to the new server;
    4. waits ``grace`` seconds (default: the clients' map refresh, 5 s) so none posts to the
       old server any more, then fences the queue there (``mbus.move_fence``: a post that
       still reaches it, from a client with an older map, is refused with ``QueueMoved``
       naming the new server, which :class:`Cluster` follows by itself; none is stranded),
       then moves its deliveries in batches: the new server commits a
       batch with its iids (``mbus.move_receive``) before the old one commits the consume, so
       a crash at any point neither loses nor duplicates a message (run the move again: it
       resumes);
    5. once the old server holds no delivery of the queue, ``mbus.finish_move``.

    Raises ``NotFound`` (unknown server or queue), ``InvalidArgument`` (the queue lives there
    already), ``InvalidState`` (several consumers, another move under way, a different queue of
    that name on the new server) and ``TimeoutExpired`` when deliveries not yet due (delayed,
    leased) stay on the old server after ``wait`` seconds: the move stays under way, posts go
    to the new server, and calling ``move_queue`` again later finishes it.

    Moves of one queue run one at a time (a session lock on the home database, released when
    the mover ends or dies): a second move waits for the first; when that one has put the queue
    on ``server``, the second returns a report with ``by_another`` set and nothing moved.
    """
    args.integer("batch", batch, low=1, high=2**31 - 1)
    args.text("queue", queue)
    args.text("server", server)
    args.seconds("grace", grace, optional=True)
    args.seconds("wait", wait)
    before = Cluster(home, refresh=0.0).placement("queue", queue)
    with translating(), psycopg.connect(home, autocommit=True) as lock:
        lock.execute(_Q["move_lock"], {"queue": queue})
        cluster = Cluster(home, refresh=0.0)
        place = cluster.placement("queue", queue)
        if place.servers[0] == server != before.servers[0] and place.moving_to is None:
            return MoveReport(queue, before.servers[0], server, by_another=True)
        return _move(cluster, home, queue, server, batch, grace, wait)


def _move(
    cluster: Cluster,
    home: str,
    queue: str,
    server: str,
    batch: int,
    grace: float | None,
    wait: float,
) -> MoveReport:
    """The move itself, under the queue's move lock."""
    place = cluster.placement("queue", queue)
    servers = cluster.servers()
    if server not in servers:
        raise NotFound(f"server {server!r} is not in the map", sqlstate="MB002")
    if place.moving_to not in (None, server):
        raise InvalidState(f"queue {queue!r} is moving to {place.moving_to!r}", sqlstate="MB008")
    report = MoveReport(queue, place.servers[0], server)
    with (
        translating(),
        psycopg.connect(servers[place.servers[0]]) as src,
        psycopg.connect(servers[server]) as dst,
    ):
        for conn in (src, dst):
            conn.execute(_Q["durable_commits"])
            conn.commit()
        consumer = _only_consumer(src, queue, place.servers[0])
        created, fenced_for = _prepare_target(dst, queue, consumer, server)
        try:
            with psycopg.connect(home) as conn:
                conn.execute(_Q["begin_move"], {"queue": queue, "server": server})
        except BaseException:
            if created:  # the move never began: leave no queue behind on the target
                _drop_if_empty(dst, queue)
            elif fenced_for is not None and not (dst.closed or dst.broken):
                _fence(dst, queue, fenced_for)  # nor open a queue that had moved away from there
            raise
        move_id = str(cluster.placement("queue", queue).move_id)
        time.sleep(5.0 if grace is None else grace)
        _fence(src, queue, server)
        deadline = time.monotonic() + wait
        while True:
            moved = transfer(src, dst, queue, consumer[0], move_id, batch, report)
            if moved:
                continue
            left = int(_one(src, "depth", {"queue": queue}))
            src.commit()
            if left == 0:
                break
            if time.monotonic() >= deadline:
                raise TimeoutExpired(
                    f"queue {queue!r}: {left} deliveries not yet due stay on "
                    f"{place.servers[0]!r}; posts go to {server!r}; run the move again later"
                )
            time.sleep(0.2)
        with psycopg.connect(home) as conn:
            conn.execute(_Q["finish_move"], {"queue": queue})
        dst.execute(_Q["forget_move"], {"move_id": move_id})
        dst.commit()
    return report


def transfer(
    src: psycopg.Connection[Any],
    dst: psycopg.Connection[Any],
    queue: str,
    consumer: str,
    move_id: str,
    batch: int,
    report: MoveReport,
) -> int:
    """Move one batch: the target commits first, then the source; return the messages taken."""
    try:
        messages = str(_one(src, "take", {"queue": queue, "consumer": consumer, "amt": batch}))
        if messages == "[]":
            src.rollback()
            return 0
        try:
            got = json.loads(
                str(
                    _one(dst, "receive", {"move_id": move_id, "queue": queue, "messages": messages})
                )
            )
            dst.commit()
        except BaseException:
            if not dst.closed:
                dst.rollback()
            raise
        between_commits()
        src.commit()
    except BaseException:
        if not src.closed:
            src.rollback()
        raise
    report.batches += 1
    report.moved += int(got["accepted"])
    report.duplicate += int(got["duplicate"])
    return int(got["accepted"]) + int(got["duplicate"])


def between_commits() -> None:
    """Called after the target's commit, before the source's (a seam for fault tests)."""


def _one(conn: psycopg.Connection[Any], query: str, params: dict[str, Any]) -> Any:
    row = conn.execute(_Q[query], params).fetchone()
    return row[0] if row else None


def _only_consumer(src: psycopg.Connection[Any], queue: str, where: str) -> tuple[str, str | None]:
    rows = src.execute(_Q["consumers"], {"queue": queue}).fetchall()
    src.commit()
    if not rows:
        raise NotFound(f"queue {queue!r} does not exist on server {where!r}", sqlstate="MB002")
    if len(rows) != 1:
        names = ", ".join(str(r[0]) for r in rows)
        raise InvalidState(
            f"queue {queue!r} has {len(rows)} consumers ({names}); a move carries a queue "
            "with one consumer",
            sqlstate="MB008",
        )
    return str(rows[0][0]), rows[0][1]


def _drop_if_empty(dst: psycopg.Connection[Any], queue: str) -> None:
    """Drop the queue a failed move made on the target, unless something was posted to it."""
    if dst.closed or dst.broken:
        return
    dst.rollback()
    if int(_one(dst, "depth", {"queue": queue})) == 0:
        _one(dst, "drop_queue", {"queue": queue})
    dst.commit()


def _fence(conn: psycopg.Connection[Any], queue: str, server: str) -> None:
    """Refuse posts to ``queue`` on this server from now on, naming ``server``."""
    conn.rollback()
    conn.execute(_Q["fence"], {"queue": queue, "server": server})
    conn.commit()


def _prepare_target(
    dst: psycopg.Connection[Any], queue: str, consumer: tuple[str, str | None], where: str
) -> tuple[bool, str | None]:
    """Make the queue with the same one consumer on the target, or check the one there and
    accept posts to it again (a queue moving back); return (made here, the server the queue
    there was fenced for)."""
    if not _one(dst, "queue_exists", {"queue": queue}):
        _one(dst, "create_queue", {"queue": queue})
        if consumer[0] != "default":
            _one(
                dst,
                "create_consumer",
                {"queue": queue, "consumer": consumer[0], "selector": consumer[1]},
            )
            _one(dst, "drop_consumer", {"queue": queue, "consumer": "default"})
        dst.commit()
        return True, None
    rows = [(str(r[0]), r[1]) for r in dst.execute(_Q["consumers"], {"queue": queue}).fetchall()]
    dst.commit()
    if rows != [consumer]:
        raise InvalidState(
            f"queue {queue!r} exists on server {where!r} with other consumers {rows}",
            sqlstate="MB008",
        )
    fenced_for = _one(dst, "unfence", {"queue": queue})
    dst.commit()
    return False, fenced_for
