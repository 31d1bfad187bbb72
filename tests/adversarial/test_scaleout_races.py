"""Scale-out races, with real connections: an uncommitted placement against a drop of its
server, a client posting with a stale map after a move, two moves of one queue at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from pgmbus.errors import InvalidState, NotFound, translating


def _waits_for_a_lock(observer: psycopg.Connection[Any], pid: int, timeout: float = 20.0) -> bool:
    """True once the backend ``pid`` waits for a lock (checked on a condition, not a sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = observer.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted)", (pid,)
        ).fetchone()
        if row and row[0]:
            return True
        time.sleep(0.02)
    return False


class _Call(threading.Thread):
    """One SQL statement on its own connection and thread; keeps its outcome."""

    def __init__(self, dsn: str, sql: str, params: tuple[Any, ...]) -> None:
        super().__init__(daemon=True)
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.pid = self.conn.info.backend_pid
        self.sql, self.params = sql, params
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with translating():
                self.conn.execute(self.sql, self.params)
        except BaseException as exc:  # kept for the test to assert on
            self.error = exc
        finally:
            self.conn.close()


def _map(home: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(home, autocommit=True)
    conn.execute("SELECT mbus.add_server('s1', 'dbname=one')")
    conn.execute("SELECT mbus.add_server('s2', 'dbname=two')")
    return conn


def _orphans(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    """Placements naming a server that is not in the map."""
    return conn.execute(
        "SELECT p.kind, p.name, s FROM mbus.placement AS p, unnest(p.servers) AS s "
        "WHERE NOT EXISTS (SELECT 1 FROM mbus.placement_server AS x WHERE x.name = s)"
    ).fetchall()


@pytest.mark.parametrize(
    "edit",
    [
        "SELECT mbus.place('queue', 'orders', ARRAY['s1'])",
        "SELECT mbus.place('topic', 'clicks', ARRAY['s2', 's1'])",
    ],
)
def test_a_drop_of_a_server_waits_for_an_uncommitted_placement_on_it(
    make_db: Callable[..., str], edit: str
) -> None:
    home = make_db()
    observer = _map(home)
    with psycopg.connect(home) as placing:
        placing.execute(edit)  # not committed yet
        drop = _Call(home, "SELECT mbus.drop_server('s1')", ())
        drop.start()
        assert _waits_for_a_lock(observer, drop.pid), "the drop must wait for the placement"
        placing.commit()
    drop.join(20)
    assert not drop.is_alive()
    assert isinstance(drop.error, InvalidState) and "still holds" in str(drop.error)
    assert _orphans(observer) == []
    names = observer.execute("SELECT name FROM mbus.placement_server ORDER BY 1").fetchall()
    assert names == [("s1",), ("s2",)]
    observer.close()


def test_a_placement_waits_for_an_uncommitted_drop_of_its_server_and_is_refused(
    make_db: Callable[..., str],
) -> None:
    home = make_db()
    observer = _map(home)
    with psycopg.connect(home) as dropping:
        dropping.execute("SELECT mbus.drop_server('s1')")  # not committed yet
        place = _Call(home, "SELECT mbus.place('queue', 'orders', ARRAY['s1'])", ())
        place.start()
        assert _waits_for_a_lock(observer, place.pid), "the placement must wait for the drop"
        dropping.commit()
    place.join(20)
    assert not place.is_alive()
    assert isinstance(place.error, NotFound) and "'s1' does not exist" in str(place.error)
    assert observer.execute("SELECT count(*) FROM mbus.placement").fetchone() == (0,)
    observer.close()


def test_a_drop_of_a_server_waits_for_an_uncommitted_move_to_it(
    make_db: Callable[..., str],
) -> None:
    home = make_db()
    observer = _map(home)
    observer.execute("SELECT mbus.place('queue', 'orders', ARRAY['s1'])")
    with psycopg.connect(home) as moving:
        moving.execute("SELECT mbus.begin_move('orders', 's2')")  # not committed yet
        drop = _Call(home, "SELECT mbus.drop_server('s2')", ())
        drop.start()
        assert _waits_for_a_lock(observer, drop.pid)
        moving.commit()
    drop.join(20)
    assert isinstance(drop.error, InvalidState) and "still holds queue orders" in str(drop.error)
    row = observer.execute("SELECT moving_to FROM mbus.placement WHERE name = 'orders'")
    assert row.fetchone() == ("s2",)
    observer.close()
