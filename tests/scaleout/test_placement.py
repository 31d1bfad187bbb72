"""The placement map of a bus over several servers: where posts go, and hostile edits refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from pgmbus.errors import AlreadyExists, InvalidArgument, InvalidState, NotFound
from pgmbus.scaleout import Cluster, key_slot, server_for_key

Conn = psycopg.Connection[Any]


def _bus(make_db: Callable[..., str]) -> tuple[str, dict[str, str], Cluster]:
    """A home database holding the map and three servers (databases of the test server)."""
    home = make_db()
    servers = {name: make_db() for name in ("s1", "s2", "s3")}
    cluster = Cluster(home, refresh=60.0)  # the edits below re-read the map themselves
    for name, dsn in servers.items():
        cluster.add_server(name, dsn)
    return home, servers, cluster


def _iids(dsn: str, queue: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT iid FROM mbus.consumen(%s, 'default', 100000)", (queue,))
        return [str(r[0]) for r in rows.fetchall()]


def _create(dsn: str, queue: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue(%s, 1)", (queue,))


def test_posts_go_to_the_server_the_map_names(make_db: Callable[..., str]) -> None:
    _, servers, cluster = _bus(make_db)
    with cluster:
        for queue, server in (("orders", "s1"), ("billing", "s2")):
            _create(servers[server], queue)
            cluster.place("queue", queue, [server])
        posted = {q: [cluster.post(q, {"n": n}) for n in range(5)] for q in ("orders", "billing")}
        assert _iids(servers["s1"], "orders") == posted["orders"]
        assert _iids(servers["s2"], "billing") == posted["billing"]
        with psycopg.connect(servers["s2"]) as conn:  # nothing of orders went elsewhere
            found = conn.execute("SELECT count(*) FROM mbus.queue WHERE qname = 'orders'")
            assert found.fetchone() == (0,)
        assert cluster.dsns_to_read("orders") == [servers["s1"]]
        conninfo = cluster.async_bus("billing").pool.conninfo
        assert isinstance(conninfo, str)
        assert conninfo.startswith(servers["s2"].split("?")[0])


def test_a_topic_is_spread_over_its_servers_by_key_hash(make_db: Callable[..., str]) -> None:
    _, servers, cluster = _bus(make_db)
    cluster.place("topic", "events", ["s1", "s2", "s3"])
    keys = [f"customer-{n}" for n in range(300)]
    where = {key: cluster.dsn_for_key("events", key) for key in keys}
    counts = {dsn: list(where.values()).count(dsn) for dsn in servers.values()}
    assert all(60 < c < 140 for c in counts.values()), counts  # rendezvous spreads them
    names = ("s1", "s2", "s3")
    assert all(where[k] == servers[server_for_key(k, names)] for k in keys)  # stable, documented
    assert cluster.topic_dsns("events") == [servers["s1"], servers["s2"], servers["s3"]]
    assert server_for_key("customer-7", names) == server_for_key(b"customer-7", names)
    assert key_slot("customer-7", 3) == key_slot(b"customer-7", 3)  # the old 'mod' scheme
    for key in keys[:30]:
        cluster.publish("events", {"k": key}, key=key)
    for dsn in servers.values():  # each event on its key's server, nowhere else
        with psycopg.connect(dsn) as conn:
            found = conn.execute("SELECT key FROM mbus.events WHERE topic = 'events'").fetchall()
        assert sorted(k for (k,) in found) == sorted(k for k in keys[:30] if where[k] == dsn)


def test_hostile_map_edits_raise_typed_errors_and_change_nothing(
    make_db: Callable[..., str],
) -> None:
    _, servers, cluster = _bus(make_db)
    _create(servers["s1"], "orders")
    cluster.place("queue", "orders", ["s1"])
    cluster.place("topic", "events", ["s1", "s2"])
    before = (cluster.servers(), cluster.placements())
    with pytest.raises(NotFound, match="'nowhere' does not exist"):
        cluster.place("queue", "billing", ["nowhere"])
    with pytest.raises(NotFound):
        cluster.place("topic", "clicks", ["s1", "nowhere"])
    with pytest.raises(AlreadyExists, match=r"placed already on \{s1\}"):
        cluster.place("queue", "orders", ["s2"])  # a queue mapped twice
    with pytest.raises(AlreadyExists):
        cluster.place("topic", "events", ["s3"])
    with pytest.raises(InvalidArgument, match="one server"):
        cluster.place("queue", "billing", ["s1", "s2"])
    with pytest.raises(InvalidArgument, match="twice"):
        cluster.place("topic", "clicks", ["s1", "s1"])
    with pytest.raises(InvalidArgument, match="queue or topic"):
        cluster.place("table", "x", ["s1"])
    with pytest.raises(InvalidArgument, match="password"):
        cluster.add_server("s4", servers["s1"] + " password=secret")
    with pytest.raises(AlreadyExists):
        cluster.add_server("s1", servers["s2"])
    with pytest.raises(InvalidState, match="still holds queue orders, topic events"):
        cluster.drop_server("s1")
    cluster.post("orders", {"pending": True})
    with pytest.raises(InvalidState, match="1 pending deliveries"):  # a map change while pending
        cluster.unplace("queue", "orders")
    with pytest.raises(NotFound, match="not placed"):
        cluster.dsn_for("billing")
    assert (cluster.servers(), cluster.placements()) == before
    assert _iids(servers["s1"], "orders") != []  # and the message is where it was
    cluster.unplace("queue", "orders")  # drained: now allowed
    cluster.close()


def test_the_placement_cli_edits_and_shows_the_map(make_db: Callable[..., str]) -> None:
    from typer.testing import CliRunner

    from pgmbus.cli import app

    home, servers = make_db(), {"a": make_db(), "b": make_db()}
    runner = CliRunner()
    for name, dsn in servers.items():
        done = runner.invoke(app, ["placement", "add-server", name, dsn, "--dsn", home])
        assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["placement", "place", "topic", "events", "a", "b", "--dsn", home])
    assert done.exit_code == 0, done.output
    refused = runner.invoke(app, ["placement", "place", "queue", "q", "zz", "--dsn", home])
    assert refused.exit_code != 0 and "'zz' does not exist" in refused.output
    shown = runner.invoke(app, ["placement", "show", "--dsn", home])
    assert shown.exit_code == 0 and "events" in shown.output and "a,b" in shown.output
