"""Writes through the placement map: each row on the server its key maps to, exactly once,
even when a task fails or the driver dies between two servers' commits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pytest

from pgmbus.errors import ConfigurationError
from pgmbus.scaleout import Cluster
from pgmbus.spark import placed
from pgmbus.spark.options import parse_write
from tests.spark.test_spark_faults import _flaky


def _map(make_db: Callable[..., str]) -> tuple[str, dict[str, str]]:
    """A home with servers s1, s2; topic 'orders' spread over both, queue 'jobs' on s2."""
    home = make_db()
    servers = {name: make_db() for name in ("s1", "s2")}
    with Cluster(home, refresh=0.0) as cluster:
        for name, dsn in servers.items():
            cluster.add_server(name, dsn)
        cluster.place("topic", "orders", ["s1", "s2"])
        with psycopg.connect(servers["s2"], autocommit=True) as conn:
            conn.execute("SELECT mbus.create_queue('jobs')")
        cluster.place("queue", "jobs", ["s2"])
    return home, servers


def _events(dsn: str) -> list[tuple[str | None, int]]:
    """(key, n) of the published events of topic 'orders' (none pending)."""
    with psycopg.connect(dsn) as conn:
        pending = conn.execute("SELECT count(*) FROM mbus.spark_pending").fetchone()
        rows = conn.execute(
            "SELECT key, (payload->>'n')::int FROM mbus.events WHERE topic = 'orders' ORDER BY 2"
        ).fetchall()
    assert pending == (0,), "an attempt is still pending"
    return [(r[0], int(r[1])) for r in rows]


def _expected(home: str, keys: list[str | None]) -> dict[str, set[str | None]]:
    with Cluster(home, refresh=0.0) as cluster:
        first = cluster.topic_dsns("orders")[0]
        out: dict[str, set[str | None]] = {}
        for key in keys:
            dsn = first if key is None else cluster.dsn_for_key("orders", key)
            out.setdefault(dsn, set()).add(key)
    return out


def test_rows_go_to_the_server_of_their_key_once_despite_a_failed_task(
    spark: Any, make_db: Callable[..., str], tmp_path: Path
) -> None:
    from pyspark.sql import functions as F

    home, servers = _map(make_db)
    flaky = _flaky(tmp_path)
    rows = spark.range(0, 200, numPartitions=2).select(
        flaky(F.to_json(F.struct(F.col("id").alias("n"))), F.col("id")).alias("payload"),
        F.when(F.col("id") % 50 == 0, F.lit(None))
        .otherwise(F.concat(F.lit("k"), F.col("id") % 37))
        .alias("key"),
    )
    rows.write.format("pgmbus").option("placementHome", home).option("topic", "orders").mode(
        "append"
    ).save()
    assert len(list(tmp_path.iterdir())) >= 1  # a first attempt did fail
    expected = _expected(home, [None if i % 50 == 0 else f"k{i % 37}" for i in range(200)])
    got = {name: _events(dsn) for name, dsn in servers.items()}
    assert sorted(n for events in got.values() for _k, n in events) == list(range(200))
    for name, dsn in servers.items():
        assert {k for k, _n in got[name]} == expected[dsn]  # each key on its own server
    with psycopg.connect(home) as conn:
        assert conn.execute("SELECT count(*) FROM mbus.spark_placed_commit").fetchone() == (0,)

    # a placed queue: written on its server
    jobs = spark.range(0, 5, numPartitions=1).select(
        F.to_json(F.struct(F.col("id").alias("n"))).alias("payload")
    )
    jobs.write.format("pgmbus").option("placementHome", home).option("queue", "jobs").mode(
        "append"
    ).save()
    with psycopg.connect(servers["s2"]) as conn:
        assert conn.execute("SELECT count(*) FROM mbus.q_jobs").fetchone() == (5,)

    unplaced = rows.limit(1).write.format("pgmbus").option("placementHome", home)
    with pytest.raises(Exception, match="'nowhere' is not placed"):
        unplaced.option("topic", "nowhere").mode("append").save()


def _stage(home: str, write_id: str, n: int) -> placed.PlacedWrite:
    options, routes = placed.routes_of(
        home, parse_write({"placementHome": home, "topic": "orders"})
    )
    batch = pa.record_batch(
        [pa.array([f'{{"n": {i}}}' for i in range(n)]), pa.array([f"k{i}" for i in range(n)])],
        names=["payload", "key"],
    )
    return placed.stage_placed(options, routes, write_id, iter([batch]))


def test_a_driver_dying_between_servers_is_finished_by_settle(
    make_db: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, servers = _map(make_db)
    options, routes = placed.routes_of(
        home, parse_write({"placementHome": home, "topic": "orders"})
    )
    message = _stage(home, "w1", 60)
    assert {p.dsn for p in message.parts} == set(servers.values())

    def die() -> None:
        raise KeyboardInterrupt  # the driver dies after settling its first server

    monkeypatch.setattr(placed, "between_servers", die)
    with pytest.raises(KeyboardInterrupt):
        placed.commit_placed(home, options, routes, "w1", 0, [message])
    first, second = sorted(servers.values())
    assert len(_events(first)) > 0
    with psycopg.connect(second) as conn:  # decided, not yet settled there: held back
        assert conn.execute("SELECT count(*) FROM mbus.spark_pending").fetchone() == (1,)
    monkeypatch.undo()

    assert placed.settle(home) == 1
    assert sorted(n for dsn in servers.values() for _k, n in _events(dsn)) == list(range(60))
    assert placed.settle(home) == 0
    # the same batch committed again (a replay of a micro-batch): nothing is published twice
    placed.commit_placed(home, options, routes, "w1", 0, [_stage(home, "w1", 60)])
    assert sorted(n for dsn in servers.values() for _k, n in _events(dsn)) == list(range(60))


def test_an_aborted_placed_write_leaves_nothing_and_options_are_checked(
    make_db: Callable[..., str],
) -> None:
    home, servers = _map(make_db)
    options, routes = placed.routes_of(
        home, parse_write({"placementHome": home, "topic": "orders"})
    )
    message = _stage(home, "w2", 30)
    placed.discard_placed(routes, options, [message])
    for dsn in servers.values():
        assert _events(dsn) == []
    with pytest.raises(ConfigurationError, match="either option dsn or option placementHome"):
        parse_write({"placementHome": home, "dsn": home, "topic": "orders"})
    with pytest.raises(ConfigurationError, match="'nowhere' is not placed"):
        placed.routes_of(home, parse_write({"placementHome": home, "topic": "nowhere"}))
    with pytest.raises(ConfigurationError, match="placement home is unreachable"):
        bad = "postgresql://127.0.0.1:1/nowhere"
        placed.routes_of(bad, parse_write({"placementHome": bad, "topic": "orders"}))


@pytest.mark.chaos  # ~25 s of Spark streaming: `make chaos` (the batch write is in the suite)
def test_a_stream_is_written_through_the_map_once_per_micro_batch(
    spark: Any, make_db: Callable[..., str], tmp_path: Path
) -> None:
    from tests.spark.conftest import publish

    home, servers = _map(make_db)
    source = make_db()
    publish(source, "in", 90, keys=11)
    events = (
        spark.readStream.format("pgmbus")
        .option("dsn", source)
        .option("group", "copier")
        .option("startingPosition", "beginning")
        .option("maxEventsPerTrigger", "40")
        .load()
    )

    def run() -> None:
        query = (
            events.select("payload", "key")
            .writeStream.format("pgmbus")
            .option("placementHome", home)
            .option("topic", "orders")
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()

    run()
    run()  # nothing new: nothing written again
    with psycopg.connect(source) as conn:
        keys = [r[0] for r in conn.execute("SELECT key FROM mbus.events WHERE topic = 'in'")]
    expected = _expected(home, keys)
    total = 0
    for dsn in servers.values():
        got = _events(dsn)
        total += len(got)
        assert {k for k, _n in got} == expected.get(dsn, set())
    assert total == 90
    with psycopg.connect(servers["s1"]) as conn:  # one ledger row per micro-batch and server
        batches = conn.execute("SELECT count(*) FROM mbus.spark_batches").fetchone()
    assert batches == (3,)
