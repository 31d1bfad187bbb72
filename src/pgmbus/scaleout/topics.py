"""Change the servers a topic is spread over, keeping each key's events in order for readers."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import psycopg

from pgmbus.data.scaleout import SCALEOUT as _Q
from pgmbus.errors import TimeoutExpired, translating
from pgmbus.scaleout.placement import Cluster


@dataclass
class TopicChangeReport:
    """What a change did: the lists, and the groups it waited for on the servers losing keys."""

    topic: str
    previous: tuple[str, ...]
    servers: tuple[str, ...]
    waited_for: list[str] = field(default_factory=list)


def change_topic_servers(
    home: str,
    topic: str,
    servers: list[str],
    *,
    grace: float | None = None,
    wait: float = 60.0,
) -> TopicChangeReport:
    """Spread ``topic`` over ``servers`` (add or remove servers) without reordering a key.

    1. ``mbus.change_topic_servers`` on the home database: publishers following the map send
       each key to its server in the new list from now on (rendezvous hashing: adding a server
       moves only the keys that now prefer it, removing one moves only its keys); readers
       following the map hold back the servers gaining keys (:meth:`Placement.held`);
    2. waits ``grace`` seconds (default: the clients' map refresh, 5 s) so no publisher uses
       the old list any more, then takes a fence (the present) on each server losing keys;
    3. waits until every consumer group on those servers has read past its fence: each moved
       key's old events are then read everywhere before its new ones become readable;
    4. ``mbus.finish_topic_change``: readers read the new list.

    Raises ``NotFound`` (unplaced topic, unknown server), ``InvalidArgument`` (empty list, a
    server twice, the list it has), ``InvalidState`` (another change under way, a topic placed
    with the old ``mod`` scheme) and ``TimeoutExpired`` when a group is still behind its fence
    after ``wait`` seconds (an abandoned group: drop it, or run the change again later; the
    change stays under way, publishers already use the new list).
    """
    with translating(), psycopg.connect(home) as conn:
        conn.execute(_Q["change_topic_servers"], {"topic": topic, "servers": servers})
        conn.commit()
    cluster = Cluster(home, refresh=0.0)
    try:
        place = cluster.placement("topic", topic)
        report = TopicChangeReport(topic, place.previous or (), place.servers)
        time.sleep(5.0 if grace is None else grace)
        fences = {name: _fence(cluster.servers()[name]) for name in place.losing()}
        deadline = time.monotonic() + wait
        while True:
            behind = {
                name: _behind(cluster.servers()[name], fence) for name, fence in fences.items()
            }
            left = [f"{g} on {name}" for name, groups in behind.items() for g in groups]
            if not left:
                break
            for entry in left:
                if entry not in report.waited_for:
                    report.waited_for.append(entry)
            if time.monotonic() >= deadline:
                raise TimeoutExpired(
                    f"topic {topic!r}: group(s) {', '.join(left)} have not read past the "
                    "change's fence; the change stays under way (publishers use the new "
                    "servers): run it again later, or drop an abandoned group"
                )
            time.sleep(0.2)
        with translating(), psycopg.connect(home) as conn:
            conn.execute(_Q["finish_topic_change"], {"topic": topic})
            conn.commit()
    finally:
        cluster.close()
    return report


def _fence(dsn: str) -> str:
    """The present of a server: every event committed there so far is before it."""
    with translating(), psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(_Q["current_cursor"]).fetchone()
    return str(row[0]) if row else ""


def _behind(dsn: str, fence: str) -> list[str]:
    """The groups (``name`` or ``name/slot``) of a server with events before ``fence`` unread."""
    with translating(), psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(_Q["groups_behind"], {"fence": fence}).fetchall()
    return [f"{name}/{slot}" if slot else str(name) for name, slot in rows]  # slot 0: plain
