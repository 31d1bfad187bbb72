"""A topic route between two servers under kill -9 of the mover (chaos).

Two embedded clusters, a topic route from the first to the second, a producer publishing 2,000
events over 20 keys on the first while the mover (``pgmbus bridge`` or the slow mover, as
subprocesses) is killed with SIGKILL at random points and restarted. The checker reads the
destination topic: every event exactly once (0 lost, 0 duplicated), each key's events in their
order, seenby and source_db exact.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.exchange.test_bridge_faults import Mover, Node, _nodes

TOTAL, KEYS = 2000, 20
READ = "SELECT key, payload, headers FROM mbus.events WHERE topic = 'ev' ORDER BY id"


@pytest.fixture
def two() -> Iterator[list[Node]]:
    """Two servers, one pgmbus database on each."""
    yield from _nodes("xy")


@pytest.mark.chaos
@pytest.mark.timeout(600)
def test_kill9_of_the_mover_of_a_topic_route_loses_and_duplicates_nothing(
    two: list[Node],
) -> None:
    a, b = two
    rng = random.Random(17)
    with a.connect() as conn:
        conn.execute("SELECT mbus.create_link('peer', %s)", (b.dsn,))
        conn.execute("SELECT mbus.create_topic_route('ev_out', 'peer', 'ev', 'ev')")

    def produce() -> None:
        with a.connect() as conn:
            for start in range(0, TOTAL, 20):  # 20 events per transaction
                conn.execute(
                    "SELECT mbus.publish('ev', jsonb_build_object('n', n), "
                    "'k' || (n %% %s)) FROM generate_series(%s::int, %s::int) AS n",
                    (KEYS, start + 1, start + 20),
                )
                time.sleep(0.01)

    producer = threading.Thread(target=produce)
    producer.start()
    mover = Mover(a)
    try:
        while producer.is_alive() or mover.kills < 3:
            mover.start(rng)
            time.sleep(max(0.0, mover.killable_at - time.monotonic()))
            mover.kill9()
        producer.join()
        mover.start(rng)  # the last one runs until the destination has everything
        deadline = time.monotonic() + 120
        with b.connect() as conn:
            while time.monotonic() < deadline:
                got = conn.execute("SELECT count(*) FROM mbus.events WHERE topic = 'ev'")
                row = got.fetchone()
                if row and row[0] >= TOTAL:
                    break
                time.sleep(0.2)
            time.sleep(1.0)  # anything more would be a duplicate: give it the time to show
            rows: list[tuple[Any, ...]] = conn.execute(READ).fetchall()
    finally:
        mover.stop()
        producer.join()
    assert mover.kills >= 3
    assert len(rows) == TOTAL  # 0 lost, 0 duplicated
    assert len({h["eid"] for *_, h in rows}) == TOTAL
    by_key: dict[str, list[int]] = {}
    for key, payload, _ in rows:
        by_key.setdefault(key, []).append(payload["n"])
    assert all(ns == sorted(ns) for ns in by_key.values())  # per-key order
    assert sorted(n for ns in by_key.values() for n in ns) == list(range(1, TOTAL + 1))
    assert all(h["seenby"] == [a.dbname, b.dbname] and h["source_db"] == a.dbname for *_, h in rows)
