"""Clients recover by themselves: Bus.listen and a Bus's pool after connections are cut."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from pgmbus.queues import Bus
from pgmbus.testing.chaos import ChaosProxy


@pytest.fixture
def proxy(db_dsn: str) -> Iterator[ChaosProxy]:
    with psycopg.connect(db_dsn, autocommit=True) as c:
        c.execute("SELECT mbus.create_queue('jobs', 1)")
    with ChaosProxy(int(conninfo_to_dict(db_dsn)["port"] or 5432)) as p:
        yield p


@pytest.mark.timeout(60)
def test_listen_goes_on_after_its_connections_are_cut(proxy: ChaosProxy, db_dsn: str) -> None:
    seen: list[int] = []
    stop = threading.Event()

    def consume() -> None:
        with Bus(proxy.dsn(db_dsn), poll_interval=0.2) as bus:
            for message in bus.listen("jobs", lease=2.0):
                seen.append(int(message.data["n"]))
                if stop.is_set():
                    return

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    with Bus(db_dsn) as producer:
        for n in range(30):
            producer.post("jobs", {"n": n})
            if n % 10 == 5:
                time.sleep(0.3)
                proxy.cut_all()
        deadline = time.monotonic() + 30
        while set(range(30)) - set(seen) and time.monotonic() < deadline:
            time.sleep(0.1)
        stop.set()
        producer.post("jobs", {"n": 99})  # wakes the loop so that it sees stop
    thread.join(10)
    assert set(range(30)) <= set(seen), "every message arrived despite the cuts"
    assert not thread.is_alive()
    assert proxy.stats.cut_all >= 2


def test_a_cut_costs_one_call_not_one_per_pooled_connection(proxy: ChaosProxy, db_dsn: str) -> None:
    with Bus(proxy.dsn(db_dsn), max_size=4) as bus:
        with bus.pool.connection(), bus.pool.connection(), bus.pool.connection():
            pass  # three idle connections in the pool
        bus.post("jobs", {"n": 1})
        proxy.cut_all()
        with pytest.raises(psycopg.OperationalError):
            bus.post("jobs", {"n": 2})
        bus.post("jobs", {"n": 3})  # the broken idle connections were dropped
        assert bus.peek("jobs")
