"""The queue message browser's API: filters, keyset paging, detail, actions, stream cursors."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from pgmbus import streams
from pgmbus.queues import Bus
from pgmbus.testing.server import TestServer
from tests.ops.conftest import ADMIN_SCOPES, Service, start


@pytest.fixture(scope="module")
def svc(pg_server: TestServer) -> Iterator[Service]:
    """One service and database for the module; each test makes its own queue."""
    name = pg_server.create_database()
    dsn = pg_server.dsn(name)
    base, stop = start(dsn)
    service = Service(dsn, base)
    service.add_key("admin", ADMIN_SCOPES)
    service.add_key("reader", ["queues:read:*", "streams:read:*"])
    try:
        yield service
    finally:
        stop()
        pg_server.drop_database(name)


def _page(svc: Service, queue: str, key: str = "admin", **params: Any) -> dict[str, Any]:
    with svc.client(key) as c:
        r = c.get(f"/v1/queues/{queue}/messages", params=params)
    assert r.status_code == 200, r.text
    page: dict[str, Any] = r.json()
    return page


def _iids(page: dict[str, Any]) -> list[str]:
    return [m["iid"] for m in page["items"]]


_made = iter(range(1000))


@pytest.fixture
def shop(svc: Service) -> dict[str, Any]:
    """A queue with consumers default and b_<n>: on default one message leased, one dead, one
    delayed; on b_<n> all three live (two ready, one delayed)."""
    n = next(_made)
    q, b = f"shop{n}", f"b_{n}"
    now = datetime.now(UTC)
    with Bus(svc.dsn) as bus:
        bus.create_queue(q)
        bus.create_consumer(q, b)
        plain = bus.post(q, {"n": 1, "who": {"name": "ann"}}, headers={"tenant": "t1"})
        urgent = bus.post(q, {"n": 2, "who": {"name": "bob"}}, priority=5)
        later = bus.post(q, {"n": 3}, delayed_until=now + timedelta(hours=1))
        [leased] = bus.lease(q, limit=1, lease=600)  # the priority 5 one
        [dying] = bus.lease(q, limit=1, lease=600)
        bus.bury(dying, "card declined")
    assert leased.iid == urgent and dying.iid == plain
    return {"queue": q, "b": b, "plain": plain, "urgent": urgent, "later": later}


def test_state_filters_split_the_deliveries(svc: Service, shop: dict[str, Any]) -> None:
    q = shop["queue"]
    every = _page(svc, q)["items"]
    states = sorted((m["consumer"], m["state"], m["iid"]) for m in every)
    assert states == sorted(
        [
            ("default", "leased", shop["urgent"]),
            ("default", "delayed", shop["later"]),
            ("default", "dead", shop["plain"]),
            (shop["b"], "ready", shop["plain"]),
            (shop["b"], "ready", shop["urgent"]),
            (shop["b"], "delayed", shop["later"]),
        ]
    )
    assert _iids(_page(svc, q, state="ready")) == [shop["plain"], shop["urgent"]]
    assert _iids(_page(svc, q, state="leased")) == [shop["urgent"]]
    assert _iids(_page(svc, q, state="delayed")) == [shop["later"], shop["later"]]
    [dead] = _page(svc, q, state="dead")["items"]
    assert (dead["iid"], dead["reason"], dead["kind"]) == (shop["plain"], "card declined", "dead")
    [leased] = _page(svc, q, state="leased")["items"]
    assert datetime.fromisoformat(leased["vt"]) > datetime.now(UTC)  # the lease's end


def test_consumer_priority_header_field_time_and_iid_filters(
    svc: Service, shop: dict[str, Any]
) -> None:
    q = shop["queue"]
    assert {m["consumer"] for m in _page(svc, q, consumer=shop["b"])["items"]} == {shop["b"]}
    assert set(_iids(_page(svc, q, priority=5))) == {shop["urgent"]}
    assert _iids(_page(svc, q, header="tenant=t1")) == [shop["plain"], shop["plain"]]
    assert _iids(_page(svc, q, header="tenant=t2")) == []
    assert _iids(_page(svc, q, field="who.name=bob")) == [shop["urgent"], shop["urgent"]]
    assert _iids(_page(svc, q, field="n=3", state="delayed")) == [shop["later"]] * 2
    future = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()
    assert _iids(_page(svc, q, since=future)) == []
    assert len(_page(svc, q, until=future)["items"]) == 6
    assert set(_iids(_page(svc, q, iid=shop["later"]))) == {shop["later"]}
    assert len(_page(svc, q, iid=shop["plain"])["items"]) == 2  # b's delivery and the dead copy


@pytest.mark.parametrize(
    "params",
    [
        {"state": "gone"},
        {"header": "no-equals-sign"},
        {"field": "a..b=1"},
        {"field": "=1"},
        {"after": "L1"},
        {"after": "X9"},
        {"limit": 0},
        {"limit": 201},
        {"since": "2026-01-01T00:00:00"},  # no time zone
        {"priority": -1},
        {"consumer": "Bad-Name"},
    ],
)
def test_bad_filters_are_422_naming_them(
    svc: Service, shop: dict[str, Any], params: dict[str, Any]
) -> None:
    with svc.client() as c:
        r = c.get(f"/v1/queues/{shop['queue']}/messages", params=params)
    assert r.status_code == 422, r.text
    assert next(iter(params)) in r.json()["message"]


def test_unknown_queue_consumer_or_message_is_404(svc: Service, shop: dict[str, Any]) -> None:
    with svc.client() as c:
        assert c.get("/v1/queues/nosuch/messages").status_code == 404
        r = c.get(f"/v1/queues/{shop['queue']}/messages", params={"consumer": "nobody"})
        assert r.status_code == 404
        assert c.get(f"/v1/queues/{shop['queue']}/messages/nosuch.1@x").status_code == 404


def test_pages_stay_stable_while_messages_are_consumed(svc: Service) -> None:
    q = f"pages{next(_made)}"
    with Bus(svc.dsn) as bus:
        bus.create_queue(q)
        iids = bus.post_batch(q, [{"i": i} for i in range(25)])
        page = _page(svc, q, limit=10)
        seen = _iids(page)
        # a consumer takes the 10 messages of the page seen and 2 of the next page
        for m in bus.lease(q, limit=12, lease=600):
            bus.ack(m)
        while page["next_after"]:
            page = _page(svc, q, limit=10, after=page["next_after"])
            seen += _iids(page)
    # nothing skipped that is still there, nothing seen twice, order kept
    assert seen == iids[:10] + iids[12:]


def test_reads_lock_and_lease_nothing(svc: Service, shop: dict[str, Any]) -> None:
    q = shop["queue"]
    table = f"mbus.q_{q}"
    with psycopg.connect(svc.dsn) as held:  # another transaction holds every delivery's lock
        held.execute(f"SELECT 1 FROM {table} FOR UPDATE")
        assert len(_page(svc, q)["items"]) == 6
        with svc.client() as c:
            assert c.get(f"/v1/queues/{q}/messages/{shop['plain']}").status_code == 200
        held.rollback()
    assert svc.value(f"SELECT count(lease_token) FROM {table}") == 1  # the fixture's lease only
    with Bus(svc.dsn) as bus:
        claimed = {m.iid for m in bus.lease(q, shop["b"], limit=5, lease=60)}
    assert claimed == {shop["plain"], shop["urgent"]}


def test_detail_shows_deliveries_dead_copies_and_the_lease(
    svc: Service, shop: dict[str, Any]
) -> None:
    q = shop["queue"]
    with svc.client() as c:
        d = c.get(f"/v1/queues/{q}/messages/{shop['plain']}").json()
        leased = c.get(f"/v1/queues/{q}/messages/{shop['urgent']}").json()
    assert d["data"] == {"n": 1, "who": {"name": "ann"}}
    assert d["headers"]["tenant"] == "t1"
    assert [(x["consumer"], x["state"]) for x in d["deliveries"]] == [(shop["b"], "ready")]
    assert [(x["consumer"], x["reason"]) for x in d["dead"]] == [("default", "card declined")]
    assert d["saga"] is None and d["waiting_for"] == []
    [held] = [x for x in leased["deliveries"] if x["consumer"] == "default"]
    assert held["state"] == "leased" and held["lease_until"] is not None
    assert held["attempts"] == 1


def test_detail_names_the_saga_and_what_a_message_waits_for(svc: Service) -> None:
    steps = (
        '[{"step": "room", "queue": "trip_rooms", "after": []},'
        ' {"step": "car", "queue": "trip_cars", "after": ["room"]}]'
    )
    with Bus(svc.dsn) as bus:
        bus.create_queue("trip_rooms")
        bus.create_queue("trip_cars")
    saga = svc.value("SELECT mbus.saga_start('trip', %s::jsonb)", (steps,))
    [room] = _page(svc, "trip_rooms")["items"]
    [car] = _page(svc, "trip_cars")["items"]
    assert car["state"] == "delayed"  # it waits for the room step
    with svc.client() as c:
        member = c.get(f"/v1/queues/trip_cars/messages/{car['iid']}").json()
    assert member["saga"]["saga_id"] == saga and member["saga"]["step"] == "car"
    assert [s["step"] for s in member["saga"]["steps"]] == ["room", "car"]
    assert member["waiting_for"] == [room["iid"]]
    assert member["deliveries"][0]["waiting"] is True


def _act(svc: Service, q: str, iid: str, action: str, **body: Any) -> Any:
    with svc.client() as c:
        if action == "delete":
            return c.delete(f"/v1/queues/{q}/messages/{iid}", params=body)
        return c.post(f"/v1/queues/{q}/messages/{iid}/{action}", json=body)


def _rows(svc: Service, q: str) -> list[tuple[Any, ...]]:
    """Every delivery and dead copy of the queue, to compare before and after."""
    return svc.sql(
        f"SELECT c, id, vt, lease_token, attempts FROM mbus.q_{q} "
        "UNION ALL SELECT NULL, dmq_id, died_at, NULL, attempts FROM mbus.dmq "
        "WHERE qname = %s ORDER BY 1, 2",
        (q,),
    )


def test_replay_brings_the_dead_copy_back(svc: Service, shop: dict[str, Any]) -> None:
    q, iid = shop["queue"], shop["plain"]
    r = _act(svc, q, iid, "replay")
    assert r.status_code == 200, r.text
    assert r.json()["changed"] == 1
    assert svc.value("SELECT count(*) FROM mbus.dmq WHERE qname = %s", (q,)) == 0
    with Bus(svc.dsn) as bus:
        [m] = bus.lease(q, limit=5, lease=60)  # default's only ready delivery: the replayed one
    assert m.iid == iid and m.data == {"n": 1, "who": {"name": "ann"}}


def test_release_makes_a_leased_message_claimable_and_its_old_lease_void(
    svc: Service, shop: dict[str, Any]
) -> None:
    q, iid = shop["queue"], shop["urgent"]
    token = svc.value(f"SELECT lease_token FROM mbus.q_{q} WHERE lease_token IS NOT NULL")
    r = _act(svc, q, iid, "release", consumer="default")
    assert (r.status_code, r.json()["changed"]) == (200, 1)
    with svc.client() as c:
        assert c.post(f"/v1/queues/{q}/ack", json={"token": str(token)}).status_code == 409
    with Bus(svc.dsn) as bus:
        [m] = bus.lease(q, limit=5, lease=60)
    assert (m.iid, m.attempts) == (iid, 2)  # attempts kept


def test_bury_and_delete_one_consumers_delivery(svc: Service, shop: dict[str, Any]) -> None:
    q, b = shop["queue"], shop["b"]
    r = _act(svc, q, shop["later"], "bury", consumer=b, reason="stale offer")
    assert (r.status_code, r.json()["changed"]) == (200, 1)
    assert svc.sql(
        "SELECT cname, iid, reason FROM mbus.dmq WHERE qname = %s AND reason = %s",
        (q, "stale offer"),
    ) == [(b, shop["later"], "stale offer")]
    r = _act(svc, q, shop["later"], "delete")  # default's delivery and b's dead copy
    assert (r.status_code, r.json()["changed"]) == (200, 2)
    assert _iids(_page(svc, q, iid=shop["later"])) == []


@pytest.mark.parametrize(
    ("which", "action"),
    [
        ("urgent", "delete"),  # default's delivery is leased
        ("urgent", "bury"),
        ("later", "release"),  # not leased
        ("later", "replay"),  # not dead
    ],
)
def test_an_action_the_state_does_not_allow_is_409_and_changes_nothing(
    svc: Service, shop: dict[str, Any], which: str, action: str
) -> None:
    q = shop["queue"]
    before = _rows(svc, q)
    r = _act(svc, q, shop[which], action)
    assert r.status_code == 409, r.text
    assert _rows(svc, q) == before


def test_stream_group_around_its_cursor(svc: Service) -> None:
    with psycopg.connect(svc.dsn, autocommit=True) as conn:
        streams.create_group(conn, "around_g", start="now")
        ids = streams.publish_batch(conn, "t.around", [{"i": i} for i in range(8)])
        streams.publish(conn, "t.other", {"x": 1})
        with conn.transaction():
            batch = streams.read_next(conn, "around_g", limit=5)
            assert batch.cursor is not None
            streams.commit(conn, "around_g", batch.cursor)
    with svc.client() as c:
        r = c.get("/v1/streams/t.around/groups/around_g/around", params={"n": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [e["id"] for e in body["before"]] == ids[4:1:-1]  # newest first
    assert [e["id"] for e in body["after"]] == ids[5:8]
    assert body["cursor"]


def test_a_narrow_filter_reads_a_bounded_stretch_per_page(svc: Service) -> None:
    """A page reads at most 10,000 rows: a filter that matches only the 10,005th message gives
    an empty page that continues, then the message."""
    q = f"narrow{next(_made)}"
    with Bus(svc.dsn) as bus:
        bus.create_queue(q)
        for _ in range(10):
            bus.post_batch(q, [{"i": i} for i in range(1000)])
        last = bus.post_batch(q, [{"i": i} for i in range(5)], headers=[{}] * 4 + [{"k": "v"}])
    first = _page(svc, q, header="k=v")
    assert first["items"] == [] and first["next_after"]
    second = _page(svc, q, header="k=v", after=first["next_after"])
    assert _iids(second) == [last[-1]] and second["next_after"] is None
    assert _iids(_page(svc, q, iid=last[-1])) == [last[-1]]  # the iid search is not bounded


def test_the_scan_bound_goes_on_among_dead_messages_too(svc: Service) -> None:
    q = f"narrowd{next(_made)}"
    with Bus(svc.dsn) as bus:
        bus.create_queue(q)
        bus.post_batch(q, [{"i": i} for i in range(6)])
        for m in bus.lease(q, limit=6, lease=60):
            bus.bury(m, "r")
    call = (
        "SELECT kind, dmq_id, data FROM mbus.http_messages(%s, 'dead', NULL, NULL, NULL, NULL,"
        " '{i}', '5', NULL, NULL, NULL, NULL, NULL, %s, 2, 4)"
    )
    first = svc.sql(call, (q, None))
    assert [k for k, _, _ in first] == ["more"]
    second = svc.sql(call, (q, first[0][1]))
    assert [(k, d) for k, _, d in second] == [("dead", {"i": 5})]


def test_around_a_slot_the_group_does_not_have_is_404(svc: Service) -> None:
    with psycopg.connect(svc.dsn, autocommit=True) as conn:
        streams.create_group(conn, "around_s", start="now", slots=2)
    with svc.client() as c:
        url = "/v1/streams/t.any/groups/around_s/around"
        assert c.get(url, params={"slot": 2}).status_code == 404
        assert c.get(url, params={"slot": 1}).status_code == 200
        r = c.get(url)  # slot 0
        assert r.status_code == 200 and r.json()["cursor"].startswith("0@")
        assert c.get("/v1/streams/t.any/groups/nosuch/around").status_code == 404
