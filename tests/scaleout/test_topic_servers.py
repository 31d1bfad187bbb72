"""Changing a topic's servers: few keys move, and readers following the map read each key in
order across the change, every event once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from pgmbus import streams
from pgmbus.errors import InvalidArgument, InvalidState, NotFound, TimeoutExpired
from pgmbus.scaleout import Cluster, Placement, change_topic_servers, server_for_key


def test_rendezvous_moves_only_the_keys_that_must_move() -> None:
    keys = [f"customer-{n}" for n in range(3000)]
    two, three = ("s1", "s2"), ("s1", "s2", "s3")
    moved = [k for k in keys if server_for_key(k, two) != server_for_key(k, three)]
    assert all(server_for_key(k, three) == "s3" for k in moved)  # only to the new server
    assert 800 < len(moved) < 1200  # about a third
    gone = [k for k in keys if server_for_key(k, three) != server_for_key(k, ("s1", "s3"))]
    assert gone and all(server_for_key(k, three) == "s2" for k in gone)  # only s2's keys
    assert server_for_key("k", ("s2", "s1")) == server_for_key("k", ("s1", "s2"))  # no order


def test_held_losing_and_readable_servers_of_a_change() -> None:
    add = Placement("topic", "t", ("a", "b", "c"), previous=("a", "b"))
    assert (add.held(), add.losing(), add.readable()) == (("c",), ("a", "b"), ("a", "b"))
    remove = Placement("topic", "t", ("a", "c"), previous=("a", "b", "c"))
    assert (remove.held(), remove.losing(), remove.readable()) == (("a", "c"), ("b",), ("b",))
    done = Placement("topic", "t", ("a", "c"))
    assert (done.held(), done.losing(), done.readable()) == ((), (), ("a", "c"))


def _map(make_db: Callable[..., str]) -> tuple[str, dict[str, str], Cluster]:
    home = make_db()
    servers = {name: make_db() for name in ("s1", "s2", "s3")}
    cluster = Cluster(home, refresh=0.0)
    for name, dsn in servers.items():
        cluster.add_server(name, dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            streams.create_group(conn, "audit", start="beginning")
    cluster.place("topic", "events", ["s1", "s2"])
    return home, servers, cluster


def _read_once(cluster: Cluster, got: list[tuple[str, int]]) -> None:
    """One round of a reader following the map: each readable server's next batch of 'audit'."""
    for dsn in cluster.topic_dsns_to_read("events"):
        with psycopg.connect(dsn) as conn:
            batch = streams.read_next(conn, "audit", limit=7)
            got.extend((str(e.key), int(e.payload["n"])) for e in batch.events)
            if batch.cursor is not None:
                streams.commit(conn, "audit", batch.cursor)
            conn.commit()


def test_adding_a_server_keeps_each_keys_order_for_readers(make_db: Callable[..., str]) -> None:
    home, servers, cluster = _map(make_db)
    sent: list[tuple[str, int]] = []

    def publish(count: int) -> None:
        for _ in range(count):
            n = len(sent)
            key = f"k{n % 23}"
            cluster.publish("events", {"n": n}, key=key)
            sent.append((key, n))

    publish(120)
    got: list[tuple[str, int]] = []
    outcome: dict[str, Any] = {}

    def change() -> None:
        try:
            outcome["report"] = change_topic_servers(
                home, "events", ["s1", "s2", "s3"], grace=0.2, wait=30
            )
        except Exception as exc:  # reported below
            outcome["error"] = exc

    mover = threading.Thread(target=change)
    mover.start()
    while mover.is_alive():  # readers and publishers go on during the change
        place = cluster.placement("topic", "events")
        if place.previous is not None:
            assert "s3" not in place.readable()  # held back while the change runs
            publish(3)  # moved keys go to s3 already
        _read_once(cluster, got)
    mover.join()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["report"].previous == ("s1", "s2")
    publish(40)
    for _ in range(60):
        _read_once(cluster, got)
    assert sorted(got) == sorted(sent)  # every event once
    for key in {k for k, _ in sent}:
        order = [n for k, n in got if k == key]
        assert order == sorted(order), key  # per key, in publishing order
    with psycopg.connect(servers["s3"]) as conn:  # the new server holds moved keys' events
        assert conn.execute("SELECT count(*) FROM mbus.events").fetchone() != (0,)
    assert cluster.placement("topic", "events").previous is None
    cluster.close()


def test_hostile_changes_get_typed_errors_and_change_nothing(
    make_db: Callable[..., str],
) -> None:
    home, servers, cluster = _map(make_db)
    before = cluster.placements()
    with pytest.raises(NotFound, match="'s9' does not exist"):
        change_topic_servers(home, "events", ["s1", "s9"], grace=0)
    with pytest.raises(NotFound, match="not placed"):
        change_topic_servers(home, "nothing", ["s1"], grace=0)
    with pytest.raises(InvalidArgument, match="needs a server"):
        change_topic_servers(home, "events", [], grace=0)
    with pytest.raises(InvalidArgument, match="names a server twice"):
        change_topic_servers(home, "events", ["s1", "s1"], grace=0)
    with pytest.raises(InvalidArgument, match=r"on .* already"):
        change_topic_servers(home, "events", ["s1", "s2"], grace=0)
    assert cluster.placements() == before
    # a group that nobody reads keeps the change from finishing: it stays under way
    for n in range(10):  # some on s2, which the change empties
        cluster.publish("events", {"n": n}, key=f"k{n}")
    with pytest.raises(TimeoutExpired, match="audit on s2"):
        change_topic_servers(home, "events", ["s1"], grace=0, wait=0.3)
    place = cluster.placement("topic", "events")
    assert (place.servers, place.previous) == (("s1",), ("s1", "s2"))
    with pytest.raises(InvalidState, match="changing from"):
        change_topic_servers(home, "events", ["s1", "s3"], grace=0)
    with pytest.raises(InvalidState, match="changing from"):
        cluster.unplace("topic", "events")
    with pytest.raises(InvalidState, match="still holds"):
        cluster.drop_server("s2")
    with psycopg.connect(servers["s2"], autocommit=True) as conn:  # the reader catches up
        streams.drop_group(conn, "audit")
    report = change_topic_servers(home, "events", ["s1"], grace=0, wait=5)  # resumed
    assert report.servers == ("s1",) and cluster.placement("topic", "events").previous is None
    with psycopg.connect(home, autocommit=True) as conn:  # a topic of the old 'mod' scheme
        conn.execute("UPDATE mbus.placement SET scheme = 'mod' WHERE name = 'events'")
    with pytest.raises(InvalidState, match="mod scheme"):
        change_topic_servers(home, "events", ["s1", "s2"], grace=0)
    cluster.close()


def test_the_cli_changes_a_topics_servers_and_reports_errors(make_db: Callable[..., str]) -> None:
    from tests.cli.conftest import error_line, run

    home, _servers, cluster = _map(make_db)
    bad = run("placement", "topic-servers", "events", "s1", "s9", "--dsn", home)
    assert bad.exit_code == 1 and "'s9' does not exist" in error_line(bad)
    done = run(
        "placement", "topic-servers", "events", "s1", "s2", "s3", "--grace", "0", "--dsn", home
    )
    assert done.exit_code == 0, done.output
    assert "now on s1,s2,s3 (was s1,s2)" in done.output
    assert cluster.placement("topic", "events").servers == ("s1", "s2", "s3")
    shown = run("placement", "show", "--dsn", home)
    assert shown.exit_code == 0 and "s1,s2,s3" in shown.output
    cluster.close()
