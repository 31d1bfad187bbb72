"""A batch read through the placement map: every server of a topic, each event exactly once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from pgmbus.errors import ConfigurationError
from pgmbus.scaleout import Cluster


def test_a_placed_topic_is_read_from_every_server_once(
    spark: Any, make_db: Callable[..., str]
) -> None:
    home = make_db()
    servers = {name: make_db() for name in ("s1", "s2")}
    with Cluster(home, refresh=0.0) as cluster:
        for name, dsn in servers.items():
            cluster.add_server(name, dsn)
        cluster.place("topic", "events", ["s1", "s2"])
        keys = [f"k{n}" for n in range(40)]
        for key in keys:
            cluster.publish("events", {"k": key}, key=key)
        where = {key: cluster.dsn_for_key("events", key) for key in keys}
    with psycopg.connect(servers["s1"], autocommit=True) as conn:  # not in the topic's read
        conn.execute("SELECT mbus.publish('other', '{}')")
    assert set(where.values()) == set(servers.values())  # both servers hold some

    df = (
        spark.read.format("pgmbus")
        .option("placementHome", home)
        .option("topics", "events")
        .option("numPartitions", 2)
        .load()
    )
    assert df.rdd.getNumPartitions() == 4  # 2 per server
    rows = df.select("key", "topic").collect()
    assert sorted(r.key for r in rows) == sorted(keys)  # every event, exactly once
    assert {r.topic for r in rows} == {"events"}

    reader = spark.read.format("pgmbus").option("placementHome", home)
    with pytest.raises(Exception, match="needs option topics"):
        reader.load().collect()
    with pytest.raises(Exception, match="'nowhere' is not placed"):
        reader.option("topics", "nowhere").load().collect()


def test_placed_read_options_are_checked() -> None:
    from pgmbus.spark.options import parse_read

    home = {"placementHome": "dbname=home", "topics": "events"}
    assert parse_read(home, streaming=True).placement_home == "dbname=home"  # readStream too
    with pytest.raises(ConfigurationError, match="either option dsn or option placementHome"):
        parse_read({**home, "dsn": "dbname=x"}, streaming=False)
    with pytest.raises(ConfigurationError, match="a cursor belongs to one server"):
        parse_read({**home, "startingPosition": "1:1:"}, streaming=False)
    assert parse_read(home, streaming=False).placement_home == "dbname=home"


def test_a_stream_reads_every_server_of_the_map_once_across_a_restart(
    spark: Any, make_db: Callable[..., str], tmp_path: Any
) -> None:
    """readStream with placementHome: one group per server, one offset; a restart resumes
    every server where the checkpoint left it, and each event reaches the sink once."""
    home = make_db()
    servers = {name: make_db() for name in ("s1", "s2")}
    sink = make_db()
    with Cluster(home, refresh=0.0) as cluster:
        for name, dsn in servers.items():
            cluster.add_server(name, dsn)
        cluster.place("topic", "events", ["s1", "s2"])

        def publish(start: int, n: int) -> None:
            for i in range(start, start + n):
                cluster.publish("events", {"n": i}, key=f"k{i % 13}")

        publish(0, 70)

        def run() -> None:
            events = (
                spark.readStream.format("pgmbus")
                .option("placementHome", home)
                .option("topics", "events")
                .option("group", "copier")
                .option("startingPosition", "beginning")
                .option("maxEventsPerTrigger", "25")
                .load()
            )
            query = (
                events.select("payload", "key")
                .writeStream.format("pgmbus")
                .option("dsn", sink)
                .option("topic", "copied")
                .option("checkpointLocation", str(tmp_path / "ckpt"))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()

        run()
        publish(70, 30)
        run()  # the restart: from the checkpointed offsets of both servers
    with psycopg.connect(sink) as conn:
        got = [
            r[0]
            for r in conn.execute(
                "SELECT (payload->>'n')::int FROM mbus.events WHERE topic = 'copied'"
            )
        ]
    assert sorted(got) == list(range(100))  # every event of both servers, once
    for dsn in servers.values():  # each server's group moved to its end
        with psycopg.connect(dsn) as conn:
            lag = conn.execute(
                "SELECT pending_events FROM mbus.group_status() WHERE group_name = 'copier'"
            ).fetchone()
        assert lag == (0,)
