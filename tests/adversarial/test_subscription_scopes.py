"""Scopes cover every object a call touches: an event sent to one subscription needs a scope
over that subscription's group, not only over the event's topic (real ``pgmbus serve``, real
keys)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from pgmbus import streams
from tests.ops.conftest import ADMIN_SCOPES, Service, start


@pytest.fixture
def svc(db_dsn: str) -> Iterator[Service]:
    base, stop = start(db_dsn)
    service = Service(db_dsn, base)
    service.add_key("admin", ADMIN_SCOPES)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        streams.create_group(conn, "audit", start="now")
    try:
        yield service
    finally:
        stop()


def test_posting_to_a_subscription_needs_a_scope_over_its_group(svc: Service) -> None:
    with psycopg.connect(svc.dsn, autocommit=True) as conn:
        sid = streams.subscribe(conn, "audit", "e.topic = 'audit.login'", {})
    svc.add_key("orders", ["streams:post:orders.*"])
    before = svc.value("SELECT count(*) FROM mbus.events")
    with svc.client("orders") as http:
        one = http.post(
            "/v1/streams/events",
            json={"topic": "orders.new", "payload": {"forged": True}, "subscription_id": sid},
        )
        batch = http.post(
            "/v1/streams/events/batch",
            json={"topic": "orders.new", "events": [{"payload": 1}], "subscription_id": sid},
        )
        plain = http.post("/v1/streams/events", json={"topic": "orders.new", "payload": 1})
    assert one.status_code == 403, one.text
    assert batch.status_code == 403, batch.text
    assert "audit" in one.json()["message"]
    assert plain.status_code == 201  # the topic scope itself still works
    assert svc.value("SELECT count(*) FROM mbus.events") == before + 1
    # with a scope over the group too, the directed event goes through
    svc.add_key("auditor", ["streams:post:orders.*", "streams:post:audit"])
    with svc.client("auditor") as http:
        ok = http.post(
            "/v1/streams/events",
            json={"topic": "orders.new", "payload": 2, "subscription_id": sid},
        )
        gone = http.post(
            "/v1/streams/events",
            json={"topic": "orders.new", "payload": 3, "subscription_id": sid + 1000},
        )
    assert ok.status_code == 201, ok.text
    assert gone.status_code == 404, gone.text
    assert svc.value("SELECT count(*) FROM mbus.events") == before + 2
