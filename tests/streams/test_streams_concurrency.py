"""16 concurrent producers with random sleeps and 5% rollbacks, a live reader and a checker."""

from __future__ import annotations

import random
import threading
import time

import psycopg

from pgmbus import streams
from tests.streams.conftest import drain


def _producer(dsn: str, seed: int, rounds: int, committed: list[int], rolled: list[int]) -> None:
    rng = random.Random(seed)
    with psycopg.connect(dsn) as conn:
        for _ in range(rounds):
            ids = []
            if rng.random() < 0.3:
                conn.execute("SAVEPOINT s")
                ids.append(streams.publish(conn, "t", {"p": seed}, key=str(seed)))
                conn.execute("ROLLBACK TO SAVEPOINT s")
                rolled.extend(ids)
                ids = []
            for _ in range(rng.randint(1, 3)):
                ids.append(streams.publish(conn, "t", {"p": seed}, key=str(seed)))
                time.sleep(rng.random() * 0.01)
            if rng.random() < 0.05:
                conn.rollback()
                rolled.extend(ids)
            else:
                conn.commit()
                committed.extend(ids)


def test_sixteen_producers_no_loss_no_duplicate_no_phantom(db_dsn: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        streams.create_group(conn, "check", start="now")
        streams.create_group(conn, "small", start="now")
    committed: list[int] = []
    rolled: list[int] = []
    threads = [
        threading.Thread(target=_producer, args=(db_dsn, seed, 25, committed, rolled))
        for seed in range(16)
    ]
    seen: list[int] = []
    small: list[int] = []
    with psycopg.connect(db_dsn) as reader:
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            seen.extend(e.id for e in drain(reader, "check"))
            small.extend(e.id for e in drain(reader, "small", max_events=3))
            time.sleep(0.005)
        for t in threads:
            t.join()
        seen.extend(e.id for e in drain(reader, "check"))
        small.extend(e.id for e in drain(reader, "small", max_events=3))
    assert len(committed) > 300 and rolled, "the run must commit and roll back"
    for got in (seen, small):
        assert len(got) == len(set(got)), "no duplicate"
        assert set(got) == set(committed), "no loss and no phantom"
        assert not set(got) & set(rolled)
    # per producer (key), events arrive in publish order
    with psycopg.connect(db_dsn) as conn:
        keys: dict[int, str] = dict(conn.execute("SELECT id, key FROM mbus.events").fetchall())
    for k in {str(s) for s in range(16)}:
        mine = [i for i in seen if keys[i] == k]
        assert mine == sorted(mine)
