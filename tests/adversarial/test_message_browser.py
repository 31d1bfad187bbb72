"""The message browser's trust rules: a key acts only where its scope allows, on the queue of
the URL only; a refusal changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from pgmbus import streams
from pgmbus.queues import Bus
from pgmbus.testing.server import TestServer
from tests.ops.conftest import ADMIN_SCOPES, Service, start

ACTIONS = ("replay", "release", "bury", "delete")


@pytest.fixture(scope="module")
def svc(pg_server: TestServer) -> Iterator[Service]:
    """Queues qa and qb, each with a leased, a dead and a ready message; keys: a reader of
    every queue, a writer of qa only, an admin."""
    name = pg_server.create_database()
    dsn = pg_server.dsn(name)
    base, stop = start(dsn)
    service = Service(dsn, base)
    service.add_key("admin", ADMIN_SCOPES)
    service.add_key("reader", ["queues:read:*", "streams:read:*"])
    service.add_key("qa_writer", ["queues:write:qa"])
    service.add_key("topic_only", ["streams:read:t.*"])
    service.add_key("group_only", ["streams:read:g_*"])
    with Bus(dsn) as bus:
        for q in ("qa", "qb"):
            bus.create_queue(q)
            bus.post_batch(q, [{"q": q, "i": i} for i in range(3)])
            leased = bus.lease(q, limit=2, lease=600)
            bus.bury(leased[1], "boom")
    with psycopg.connect(dsn, autocommit=True) as conn:
        streams.create_group(conn, "g_around", start="beginning")
        streams.publish(conn, "t.one", {"n": 1})
        streams.publish(conn, "secret", {"n": 2})
    try:
        yield service
    finally:
        stop()
        pg_server.drop_database(name)


def _state(svc: Service) -> list[tuple[Any, ...]]:
    return svc.sql(
        "SELECT 'qa', id, vt, lease_token, attempts FROM mbus.q_qa "
        "UNION ALL SELECT 'qb', id, vt, lease_token, attempts FROM mbus.q_qb "
        "UNION ALL SELECT qname, dmq_id, died_at, NULL, attempts FROM mbus.dmq ORDER BY 1, 2"
    )


def _iids(svc: Service, q: str) -> dict[str, str]:
    """The iid of the queue's leased, dead and ready message."""
    leased = svc.value(f"SELECT id FROM mbus.q_{q} WHERE lease_token IS NOT NULL")
    ready = svc.value(f"SELECT id FROM mbus.q_{q} WHERE lease_token IS NULL")
    dead = svc.value("SELECT iid FROM mbus.dmq WHERE qname = %s", (q,))
    db = svc.value("SELECT current_database()")
    return {
        "release": f"{q}.{leased}@{db}",
        "replay": dead,
        "bury": f"{q}.{ready}@{db}",
        "delete": f"{q}.{ready}@{db}",
    }


def _act(c: httpx.Client, q: str, iid: str, action: str) -> httpx.Response:
    if action == "delete":
        return c.delete(f"/v1/queues/{q}/messages/{iid}")
    return c.post(f"/v1/queues/{q}/messages/{iid}/{action}", json={})


@pytest.mark.parametrize("action", ACTIONS)
def test_a_reader_key_cannot_act(svc: Service, action: str) -> None:
    before = _state(svc)
    with svc.client("reader") as c:
        r = _act(c, "qa", _iids(svc, "qa")[action], action)
    assert r.status_code == 403 and "queues:write" in r.json()["message"]
    assert _state(svc) == before


@pytest.mark.parametrize("action", ACTIONS)
def test_another_queues_message_through_my_queues_url_is_404(svc: Service, action: str) -> None:
    """qa's writer names qb's message in qa's URL: not found, and qb keeps it."""
    before = _state(svc)
    with svc.client("qa_writer") as c:
        r = _act(c, "qa", _iids(svc, "qb")[action], action)
        assert r.status_code == 404, r.text
        assert c.get(f"/v1/queues/qa/messages/{_iids(svc, 'qb')[action]}").status_code == 404
        assert _act(c, "qb", _iids(svc, "qb")[action], action).status_code == 403
    assert _state(svc) == before


def test_a_queues_messages_are_not_read_through_another_queue(svc: Service) -> None:
    with svc.client("qa_writer") as c:
        r = c.get(f"/v1/queues/qa/messages/{_iids(svc, 'qb')['bury']}")
        assert r.status_code == 404
        page = c.get("/v1/queues/qa/messages", params={"iid": _iids(svc, "qb")["bury"]})
        assert page.status_code == 200 and page.json()["items"] == []
        assert c.get("/v1/queues/qb/messages").status_code == 403
        assert c.get(f"/v1/queues/qb/messages/{_iids(svc, 'qb')['bury']}").status_code == 403


def test_filters_are_values_not_sql(svc: Service) -> None:
    """A filter that would be SQL if pasted into the statement matches nothing and runs
    nothing."""
    before = _state(svc)
    evil = "x') OR true; DELETE FROM mbus.dmq; --"
    with svc.client("reader") as c:
        for params in ({"header": f"{evil}={evil}"}, {"field": f"{evil}={evil}"}, {"iid": evil}):
            r = c.get("/v1/queues/qa/messages", params=params)
            assert r.status_code == 200 and r.json()["items"] == [], params
    assert _state(svc) == before


def test_around_needs_the_topic_and_the_group(svc: Service) -> None:
    url = "/v1/streams/t.one/groups/g_around/around"
    with svc.client("topic_only") as c:
        assert c.get(url).status_code == 403
    with svc.client("group_only") as c:
        assert c.get(url).status_code == 403
        assert c.get("/v1/streams/secret/groups/g_around/around").status_code == 403
    with svc.client("reader") as c:
        r = c.get(url)
    assert r.status_code == 200 and [e["payload"] for e in r.json()["after"]] == [{"n": 1}]
