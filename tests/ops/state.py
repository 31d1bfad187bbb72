"""Known state in every engine, made through the public APIs, for metrics and dashboard tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from pgmbus import streams
from pgmbus.queues import Bus
from pgmbus.queues.saga import Saga, Step


def build(dsn: str) -> dict[str, Any]:
    """Queues with ready, delayed, leased and dead messages; a lagging stream group with a
    retry and a dead letter; callbacks pending, due, late and finished with attempts; sagas;
    a schedule. Returns the names and ids the tests look for."""
    now = datetime.now(UTC)
    with Bus(dsn) as bus:
        bus.create_queue("orders")
        bus.create_consumer("orders", "audit")
        bus.create_queue("mail")
        bus.post_batch("orders", [{"n": i} for i in range(5)])
        bus.post("orders", {"n": 99}, delayed_until=now + timedelta(hours=1))
        leased = bus.lease("orders", limit=2, lease=600)
        bus.bury(leased[0], "card declined")
        bus.post_batch("mail", [{"to": f"u{i}@example.org"} for i in range(3)])
        [m] = bus.lease("mail", limit=1, lease=600)
        bus.bury(m, "smtp 550 mailbox unavailable")
        for q in ("trip_rooms", "trip_undo_rooms", "trip_tickets"):
            bus.create_queue(q)
    with psycopg.connect(dsn, autocommit=True) as conn:
        streams.create_group(conn, "billing", start="now")
        streams.create_group(conn, "search", start="now", slots=2)
        ids = streams.publish_batch(
            conn, "orders.created", [{"n": i} for i in range(6)], keys=[f"k{i}" for i in range(6)]
        )
        conn.execute("UPDATE mbus.stream_groups SET max_attempts = 2 WHERE name = 'billing'")
        with conn.transaction():
            streams.retry_event(conn, "billing", ids[0], error="timeout")
        with conn.transaction():
            streams.retry_event(conn, "billing", ids[1], error="boom")
            streams.retry_event(conn, "billing", ids[1], error="boom again")
        client = conn.execute("SELECT client_id FROM mbus.timer_add_client('shop')").fetchone()
        cid = client[0] if client else 0
        create = (
            "SELECT (callback->>'id')::bigint FROM mbus.timer_create(%s, 'carts', %s, %s, "
            "'https://shop.example.org/hook', '{\"cart\": 7}')"
        )
        callbacks = {}
        for key, at in (
            ("soon", now + timedelta(hours=2)),
            ("due", now - timedelta(seconds=1)),
            ("late", now - timedelta(minutes=10)),
            ("done", now - timedelta(seconds=30)),
            ("broken", now - timedelta(seconds=20)),
        ):
            row = conn.execute(create, (cid, key, at)).fetchone()
            callbacks[key] = row[0] if row else 0
        attempts = (
            "INSERT INTO mbus.timer_attempts (callback_id, attempt, call, dispatcher,"
            " started_at, finished_at, outcome, status_code, error)"
            " VALUES (%s, 1, %s, 'd1', %s, %s, %s, %s, %s)"
        )
        done_at = now - timedelta(seconds=30) + timedelta(milliseconds=40)
        conn.execute(attempts, (callbacks["done"], 0, done_at, done_at, "ok", 200, None))
        broke_at = now - timedelta(seconds=20) + timedelta(seconds=3)
        conn.execute(
            attempts, (callbacks["broken"], 0, broke_at, broke_at, "error", 503, "HTTP 503")
        )
        conn.execute(attempts, (callbacks["broken"], 1, broke_at, broke_at, "reject", 410, "gone"))
        finish = (
            "UPDATE mbus.timer_callbacks SET status = %s, finished_at = %s, attempts = 1, "
            "last_status_code = %s, last_error = %s WHERE id = %s"
        )
        conn.execute(finish, ("notified", done_at, 200, None, callbacks["done"]))
        conn.execute(finish, ("failed", broke_at, 410, "gone", callbacks["broken"]))
        conn.execute(
            "SELECT mbus.timer_schedule_create(%s, 'nightly', 'https://shop.example.org/nightly',"
            " '0 3 * * *', 'UTC', NULL)",
            (cid,),
        )
        trip = Saga(
            "trip",
            [
                Step("room", "trip_rooms", compensate="trip_undo_rooms"),
                Step("ticket", "trip_tickets", ("room",)),
            ],
        )
        with conn.transaction():
            first = trip.start(conn, {"who": "ada"})
        with conn.transaction():
            second = trip.start(conn, {"who": "bob"})
        conn.execute("SELECT mbus.saga_rollback(%s, 'no rooms left')", (second,))
    return {"events": ids, "callbacks": callbacks, "sagas": (first, second), "client": "shop"}
