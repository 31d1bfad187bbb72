"""Scale-out races, with real connections: an uncommitted placement against a drop of its
server, a client posting with a stale map after a move, two moves of one queue at once."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from pgmbus.errors import DatabaseError, InvalidState, NotFound, QueueMoved, translating
from pgmbus.scaleout import Cluster, move_queue


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


def _cluster(make_db: Callable[..., str], count: int = 3) -> tuple[str, dict[str, str]]:
    """A home database and two servers, queue ``orders`` placed on s1 with ``count`` messages."""
    home = make_db()
    servers = {"s1": make_db(), "s2": make_db()}
    with Cluster(home, refresh=60.0) as cluster:
        for name, dsn in servers.items():
            cluster.add_server(name, dsn)
        with psycopg.connect(servers["s1"], autocommit=True) as conn:
            conn.execute("SELECT mbus.create_queue('orders', 1)")
        cluster.place("queue", "orders", ["s1"])
        for n in range(count):
            cluster.post("orders", {"n": n})
    return home, servers


def _pending(dsn: str) -> list[int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT (q.data->>'n')::int FROM mbus.q_orders AS q ORDER BY 1"
        ).fetchall()
    return [int(r[0]) for r in rows]


def test_a_client_with_a_map_older_than_a_move_posts_to_the_new_server(
    make_db: Callable[..., str],
) -> None:
    home, servers = _cluster(make_db)
    stale = Cluster(home, refresh=3600.0)
    assert stale.dsn_for("orders") == servers["s1"]  # read before the move, trusted for an hour
    assert move_queue(home, "orders", "s2", grace=0.0).moved == 3
    iid = stale.post("orders", {"n": 3})  # refused by s1, then sent to s2 by the cluster
    assert iid.endswith("@" + _db(servers["s2"]))
    assert stale.dsn_for("orders") == servers["s2"]
    assert _pending(servers["s1"]) == []
    assert _pending(servers["s2"]) == [0, 1, 2, 3]
    stale.close()


def test_a_plain_post_to_the_server_a_queue_left_is_refused_naming_the_new_server(
    make_db: Callable[..., str],
) -> None:
    home, servers = _cluster(make_db)
    move_queue(home, "orders", "s2", grace=0.0)
    with psycopg.connect(servers["s1"], autocommit=True) as conn:
        for sql in (
            "SELECT mbus.post_orders('{\"n\": 9}')",
            "SELECT mbus.post('orders', '{\"n\": 9}')",
            "SELECT mbus.postn_orders(ARRAY['{\"n\": 9}'::jsonb])",
        ):
            moved = "'orders' has moved to server 's2'"
            with pytest.raises(QueueMoved, match=moved) as caught, translating():
                conn.execute(sql)
            assert caught.value.sqlstate == "MB010" and caught.value.server == "s2"
    assert _pending(servers["s1"]) == []
    assert _pending(servers["s2"]) == [0, 1, 2]
    # and back: s1 takes posts again once the queue moves back to it
    assert move_queue(home, "orders", "s1", grace=0.0).moved == 3
    with psycopg.connect(servers["s1"], autocommit=True) as conn:
        conn.execute("SELECT mbus.post_orders('{\"n\": 3}')")
    assert _pending(servers["s1"]) == [0, 1, 2, 3]
    with (
        psycopg.connect(servers["s2"], autocommit=True) as conn,
        pytest.raises(QueueMoved),
        translating(),
    ):
        conn.execute("SELECT mbus.post_orders('{\"n\": 4}')")


def test_a_post_in_flight_on_the_old_server_when_the_move_fences_it_is_moved_too(
    make_db: Callable[..., str],
) -> None:
    """The fence waits for a transaction that posted to the old server and has not committed;
    the drain after it carries that message: nothing is left behind."""
    home, servers = _cluster(make_db)
    observer = psycopg.connect(servers["s1"], autocommit=True)
    posting = psycopg.connect(servers["s1"])
    posting.execute("SELECT mbus.post_orders('{\"n\": 3}')")  # not committed yet
    outcome: dict[str, Any] = {}

    def mover() -> None:
        try:
            outcome["report"] = move_queue(home, "orders", "s2", grace=0.0)
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=mover, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    fenced = False
    while time.monotonic() < deadline and not fenced:  # the mover's fence waits for the post
        row = observer.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks AS l JOIN pg_class AS c ON c.oid = l.relation"
            " WHERE NOT l.granted AND c.relname LIKE 'q_orders%%')"
        ).fetchone()
        fenced = bool(row and row[0])
        time.sleep(0.02)
    assert fenced
    posting.commit()
    posting.close()
    thread.join(60)
    assert "error" not in outcome, outcome
    assert outcome["report"].moved == 4
    assert _pending(servers["s1"]) == []
    assert _pending(servers["s2"]) == [0, 1, 2, 3]
    observer.close()


def _db(dsn: str) -> str:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT current_database()").fetchone()
    return str(row[0]) if row else ""


def test_two_moves_of_one_queue_at_once_both_succeed_and_move_each_message_once(
    make_db: Callable[..., str],
) -> None:
    """Two ``pgmbus placement move`` processes of one queue: the second waits for the first and
    reports its success (exit 0); the data arrives once, in order."""
    home, servers = _cluster(make_db, 200)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "pgmbus", "placement", "move", "orders", "s2"]
    command += ["--grace", "0.5", "--batch", "20", "--dsn", home]
    movers = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for _ in range(2)
    ]
    outputs = [(m.communicate(timeout=120)[0].decode(), m.returncode) for m in movers]
    assert [code for _, code in outputs] == [0, 0], outputs
    text = " ".join(out for out, _ in outputs)
    assert "200 message(s)" in text and "by another move of it" in text, text
    assert _pending(servers["s1"]) == []
    assert _pending(servers["s2"]) == list(range(200))
    with Cluster(home, refresh=0.0) as cluster:
        place = cluster.placement("queue", "orders")
    assert (place.servers, place.moving_to) == (("s2",), None)


def test_a_move_back_that_fails_to_begin_leaves_the_old_server_fenced(
    make_db: Callable[..., str],
) -> None:
    """The target a queue once left is opened for the move back; when the move cannot begin
    (here the home refuses to change the map), it is fenced again: a stale client is still
    refused there and sent where the map points."""
    home, servers = _cluster(make_db)
    move_queue(home, "orders", "s2", grace=0.0)
    with psycopg.connect(home, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
            "$$BEGIN RAISE EXCEPTION 'home refuses'; END$$"
        )
        conn.execute(
            "CREATE TRIGGER refuse BEFORE UPDATE ON mbus.placement "
            "FOR EACH ROW EXECUTE FUNCTION refuse()"
        )
    with pytest.raises(DatabaseError, match="home refuses"):
        move_queue(home, "orders", "s1", grace=0.0)
    with (
        psycopg.connect(servers["s1"], autocommit=True) as conn,
        pytest.raises(QueueMoved, match="moved to server 's2'"),
        translating(),
    ):
        conn.execute("SELECT mbus.post_orders('{\"n\": 3}')")
    assert _pending(servers["s1"]) == []
    assert _pending(servers["s2"]) == [0, 1, 2]
