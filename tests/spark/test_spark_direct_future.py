"""The Spark reader and the PGMB seed rows: directed and future-dated events."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import psycopg

from pgmbus import streams


def _ids(df: Any) -> list[tuple[int, dict[str, Any]]]:
    return [(r.id, json.loads(r.payload)) for r in df.orderBy("id").collect()]


def test_spark_reads_directed_events_per_subscription_and_future_ones_when_due(
    spark: Any, db_dsn: str
) -> None:
    # seed 003: "`subscription_id`: if an event has to be directly sent to a single
    # subscription, this column is set to that subscription's ID." and future-dated events:
    # "published now, visible to readers from a given time"
    with psycopg.connect(db_dsn) as conn:
        streams.create_group(conn, "g", start="now")
        sub = streams.subscribe(conn, "g", "true")
        plain = streams.publish(conn, "t", {"n": "plain"})
        direct = streams.publish(conn, "t", {"n": "direct"}, subscription_id=sub)
        due = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
        later = streams.publish(conn, "t", {"n": "later"}, delayed_until=due)
        conn.commit()

    def load(**options: Any) -> Any:
        reader = spark.read.format("pgmbus").option("dsn", db_dsn)
        for k, v in options.items():
            reader = reader.option(k, v)
        return reader.load()

    assert _ids(load()) == [(plain, {"n": "plain"})]
    assert _ids(load(subscriptionId=sub)) == [(direct, {"n": "direct"})]
    with psycopg.connect(db_dsn) as conn:  # its time comes (Spark jobs take seconds here)
        conn.execute("UPDATE mbus.stream_scheduled SET delayed_until = now() - interval '1 ms'")
    # the reader's "latest" cursor first moves the due event into the log
    assert _ids(load()) == [(plain, {"n": "plain"}), (later, {"n": "later"})]
    assert _ids(load()) == [(plain, {"n": "plain"}), (later, {"n": "later"})]
