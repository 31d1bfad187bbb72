"""Moving a queue between servers: drained exactly once, in order, resumable after a crash."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from pgmbus.errors import DatabaseError, InvalidArgument, InvalidState, NotFound
from pgmbus.scaleout import Cluster, move, move_queue


def _setup(make_db: Callable[..., str], count: int) -> tuple[str, dict[str, str], list[str]]:
    home = make_db()
    servers = {"s1": make_db(), "s2": make_db()}
    cluster = Cluster(home, refresh=60.0)  # the edits below re-read the map themselves
    for name, dsn in servers.items():
        cluster.add_server(name, dsn)
    with psycopg.connect(servers["s1"], autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue('orders', 1)")
    cluster.place("queue", "orders", ["s1"])
    iids = [cluster.post("orders", {"n": n}) for n in range(count)]
    cluster.close()
    return home, servers, iids


def _drain(dsn: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT iid, data, headers FROM mbus.consumen('orders', 'default', 100000)"
        ).fetchall()
    return [(str(r[0]), r[1], r[2]) for r in rows]


def _db(dsn: str) -> str:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT current_database()").fetchone()
    return str(row[0]) if row else ""


def test_a_move_drains_the_old_server_into_the_new_once_in_order(
    make_db: Callable[..., str],
) -> None:
    home, servers, iids = _setup(make_db, 250)
    report = move_queue(home, "orders", "s2", batch=40, grace=0.0)
    assert (report.moved, report.duplicate, report.batches) == (250, 0, 7)
    cluster = Cluster(home, refresh=0.0)
    assert cluster.dsn_for("orders") == servers["s2"]
    assert cluster.placement("queue", "orders").moving_to is None
    cluster.post("orders", {"n": 250})  # posts now land on the new server
    assert _drain(servers["s1"]) == []
    got = _drain(servers["s2"])
    assert len(got) == 251
    assert [iid for iid, _, _ in got[:250]] == iids  # same iids, same order, each once
    assert [d["n"] for _, d, _ in got] == list(range(251))
    s1, s2 = _db(servers["s1"]), _db(servers["s2"])
    assert all(h["seenby"] == [s1, s2] and h["source_db"] == s1 for _, _, h in got[:250])
    with psycopg.connect(servers["s2"]) as conn:  # the move forgot its iids once finished
        assert conn.execute("SELECT count(*) FROM mbus.move_received").fetchone() == (0,)
        conn.execute(
            "SELECT mbus.post_orders(jsonb_build_object('n', n)) FROM generate_series(1, 30) n"
        )
        conn.commit()
    back = move_queue(home, "orders", "s1", grace=0.0)  # and back again
    assert back.moved == 30 and len(_drain(servers["s1"])) == 30
    cluster.close()


def test_a_crash_between_the_commits_is_resumed_without_duplicates(
    make_db: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, servers, iids = _setup(make_db, 100)
    calls = {"n": 0}

    def crash() -> None:  # the target committed the third batch; the mover dies before the source
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(move, "between_commits", crash)
    with pytest.raises(KeyboardInterrupt):
        move_queue(home, "orders", "s2", batch=10, grace=0.0)
    cluster = Cluster(home, refresh=0.0)
    assert cluster.placement("queue", "orders").moving_to == "s2"  # posts already go to s2
    assert cluster.dsn_for("orders") == servers["s2"]
    assert cluster.dsns_to_read("orders") == [servers["s1"], servers["s2"]]
    report = move_queue(home, "orders", "s2", batch=10, grace=0.0)  # resumes the same move
    assert (report.moved, report.duplicate) == (70, 10)  # the re-sent batch is recognised
    assert _drain(servers["s1"]) == []
    back = move_queue(home, "orders", "s1", batch=10, grace=0.0)  # s1 is in every seenby
    assert (back.moved, back.duplicate) == (100, 0)  # a move is not a loop: none refused
    assert [iid for iid, _, _ in _drain(servers["s1"])] == iids


def test_refused_moves_change_nothing(make_db: Callable[..., str]) -> None:
    home, servers, _ = _setup(make_db, 5)
    cluster = Cluster(home, refresh=0.0)
    before = cluster.placements()
    with pytest.raises(NotFound, match="'s9' is not in the map"):
        move_queue(home, "orders", "s9", grace=0.0)
    with pytest.raises(NotFound, match="not placed"):
        move_queue(home, "billing", "s2", grace=0.0)
    with pytest.raises(InvalidArgument, match="lives on 's1' already"):
        move_queue(home, "orders", "s1", grace=0.0)
    with psycopg.connect(servers["s1"], autocommit=True) as conn:
        conn.execute("SELECT mbus.create_consumer('orders', 'audit')")
    with pytest.raises(InvalidState, match="2 consumers"):
        move_queue(home, "orders", "s2", grace=0.0)
    with psycopg.connect(servers["s1"], autocommit=True) as conn:
        conn.execute("SELECT mbus.drop_consumer('orders', 'audit')")
    with psycopg.connect(servers["s2"], autocommit=True) as conn:  # another queue of that name
        conn.execute("SELECT mbus.create_queue('orders', 1)")
        conn.execute("SELECT mbus.create_consumer('orders', 'other')")
    with pytest.raises(InvalidState, match="other consumers"):
        move_queue(home, "orders", "s2", grace=0.0)
    assert cluster.placements() == before
    assert len(_drain(servers["s1"])) == 5


def test_a_move_that_fails_to_begin_leaves_no_queue_on_the_target(
    make_db: Callable[..., str],
) -> None:
    """The target's queue is made before the map says 'moving'; when that step fails (here a
    trigger on the home database refuses it), the queue made for the move is dropped again."""
    home, servers, _ = _setup(make_db, 3)
    with psycopg.connect(home, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
            "$$BEGIN RAISE EXCEPTION 'home refuses'; END$$"
        )
        conn.execute(
            "CREATE TRIGGER refuse BEFORE UPDATE ON mbus.placement "
            "FOR EACH ROW EXECUTE FUNCTION refuse()"
        )
    cluster = Cluster(home, refresh=0.0)
    before = cluster.placements()
    with pytest.raises(DatabaseError, match="home refuses"):
        move_queue(home, "orders", "s2", grace=0.0)
    with psycopg.connect(servers["s2"]) as conn:
        assert conn.execute("SELECT count(*) FROM mbus.queue").fetchone() == (0,)
        leftover = conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'post_orders'")
        assert leftover.fetchone() == (0,)
    assert cluster.placements() == before
    assert len(_drain(servers["s1"])) == 3
    with psycopg.connect(home, autocommit=True) as conn:  # the next try moves it
        conn.execute("DROP TRIGGER refuse ON mbus.placement")
    assert move_queue(home, "orders", "s2", grace=0.0).moved == 0  # drained above
    assert cluster.dsn_for("orders") == servers["s2"]
    cluster.close()
