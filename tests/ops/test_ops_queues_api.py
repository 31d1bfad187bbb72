"""/v1/queues over a live server: create, post, lease/ack/nack/extend/bury, dmq, scopes."""

from __future__ import annotations

import time

import httpx

from tests.ops.conftest import Service


def _error(r: httpx.Response) -> dict[str, str]:
    body: dict[str, str] = r.json()
    assert set(body) == {"error", "message"}, body
    return body


def test_create_post_stats_and_list(service: Service) -> None:
    with service.client() as c:
        r = c.post("/v1/queues", json={"queue": "orders"})
        assert r.status_code == 201, r.text
        assert r.json()["consumers"] == ["default"]
        assert c.post("/v1/queues", json={"queue": "orders"}).status_code == 200
        r = c.post("/v1/queues/orders/messages", json={"data": {"n": 1}})
        assert r.status_code == 201, r.text
        [iid] = r.json()["iids"]
        assert iid.startswith("orders.")
        r = c.post(
            "/v1/queues/orders/messages/batch",
            json={"messages": [{"data": {"n": i}} for i in range(2, 5)]},
        )
        assert r.status_code == 201 and len(r.json()["iids"]) == 3
        later = "2999-01-01T00:00:00+00:00"
        c.post("/v1/queues/orders/messages", json={"data": {"n": 5}, "delayed_until": later})
        [stats] = c.get("/v1/queues/orders/stats").json()
        assert (stats["depth"], stats["ready"], stats["delayed"]) == (5, 4, 1)
        assert [q["qname"] for q in c.get("/v1/queues").json()] == ["orders"]
    assert service.value("SELECT count(*) FROM mbus.q_orders") == 5


def test_lease_ack_nack_extend_bury(service: Service) -> None:
    with service.client() as c:
        c.post("/v1/queues", json={"queue": "jobs"})
        c.post(
            "/v1/queues/jobs/messages/batch",
            json={"messages": [{"data": {"n": i}} for i in range(4)]},
        )
        r = c.post("/v1/queues/jobs/lease", json={"limit": 4, "lease_s": 60})
        msgs = r.json()["messages"]
        assert [m["data"]["n"] for m in msgs] == [0, 1, 2, 3]
        assert all(m["token"] and m["attempts"] == 1 for m in msgs)
        assert c.post("/v1/queues/jobs/ack", json={"token": msgs[0]["token"]}).status_code == 204
        # a second ack of the same token: the lease is gone
        r = c.post("/v1/queues/jobs/ack", json={"token": msgs[0]["token"]})
        assert r.status_code == 409 and _error(r)["error"] == "stale_lease"
        assert c.post("/v1/queues/jobs/nack", json={"token": msgs[1]["token"]}).status_code == 204
        r = c.post("/v1/queues/jobs/extend", json={"token": msgs[2]["token"], "lease_s": 600})
        assert r.status_code == 200 and r.json()["lease_until"] > msgs[2]["lease_until"]
        r = c.post("/v1/queues/jobs/bury", json={"token": msgs[3]["token"], "reason": "bad"})
        assert r.status_code == 200, r.text
        dead = r.json()
        assert (dead["qname"], dead["reason"], dead["data"]) == ("jobs", "bad", {"n": 3})
        again = c.post("/v1/queues/jobs/lease", json={"limit": 10}).json()["messages"]
        assert [m["data"]["n"] for m in again] == [1]  # the nacked one; 2 is still leased
        assert again[0]["attempts"] == 2
        # amount is the old spelling of limit (still accepted); both at once is refused
        c.post("/v1/queues/jobs/messages", json={"data": {"n": 5}})
        c.post("/v1/queues/jobs/messages", json={"data": {"n": 6}})
        old = c.post("/v1/queues/jobs/lease", json={"amount": 1}).json()["messages"]
        assert [m["data"]["n"] for m in old] == [5]
        both = c.post("/v1/queues/jobs/lease", json={"amount": 1, "limit": 1})
        assert both.status_code == 422 and "amount" in _error(both)["message"]


def test_dmq_browse_replay_delete(service: Service) -> None:
    with service.client() as c:
        c.post("/v1/queues", json={"queue": "mail"})
        c.post(
            "/v1/queues/mail/messages/batch",
            json={"messages": [{"data": {"n": 1}}, {"data": {"n": 2}}]},
        )
        for m in c.post("/v1/queues/mail/lease", json={"limit": 2}).json()["messages"]:
            c.post("/v1/queues/mail/bury", json={"token": m["token"], "reason": "smtp down"})
        page = c.get("/v1/queues/mail/dmq").json()
        first, second = page["items"]
        assert page["next_after"] is None
        assert c.get(f"/v1/queues/mail/dmq/{first['dmq_id']}").json()["data"] == {"n": 1}
        r = c.post(f"/v1/queues/mail/dmq/{first['dmq_id']}/replay")
        assert r.status_code == 200, r.text
        assert c.delete(f"/v1/queues/mail/dmq/{second['dmq_id']}").status_code == 204
        assert c.get("/v1/queues/mail/dmq").json()["items"] == []
        r = c.get(f"/v1/queues/mail/dmq/{second['dmq_id']}")
        assert r.status_code == 404 and _error(r)["error"] == "not_found"
        [back] = c.post("/v1/queues/mail/lease", json={}).json()["messages"]
        assert back["data"] == {"n": 1}
    assert service.value("SELECT count(*) FROM mbus.dmq") == 0


def test_scopes(service: Service) -> None:
    with service.client() as c:
        for q in ("orders_eu", "orders_us", "billing"):
            c.post("/v1/queues", json={"queue": q})
    service.add_key("producer", ["queues:post:orders_*"])
    service.add_key("worker", ["queues:consume:orders_eu"])
    service.add_key("viewer", ["queues:read:*"])
    service.add_key("nobody", [])
    with service.client("producer") as p:
        assert p.post("/v1/queues/orders_eu/messages", json={"data": {}}).status_code == 201
        r = p.post("/v1/queues/billing/messages", json={"data": {}})
        assert r.status_code == 403 and _error(r)["error"] == "forbidden"
        assert p.post("/v1/queues/orders_eu/lease", json={}).status_code == 403
        assert p.post("/v1/queues", json={"queue": "orders_x"}).status_code == 403
        assert sorted(q["qname"] for q in p.get("/v1/queues").json()) == ["orders_eu", "orders_us"]
    with service.client("worker") as w:
        assert len(w.post("/v1/queues/orders_eu/lease", json={}).json()["messages"]) == 1
        assert w.post("/v1/queues/orders_us/lease", json={}).status_code == 403
        assert w.post("/v1/queues/orders_eu/messages", json={"data": {}}).status_code == 403
    with service.client("viewer") as v:
        assert len(v.get("/v1/queues").json()) == 3
        assert v.get("/v1/queues/billing/stats").status_code == 200
        assert v.post("/v1/queues/billing/messages", json={"data": {}}).status_code == 403
        assert v.post("/v1/queues/billing/dmq/1/replay").status_code == 403
    with service.client("nobody") as n:
        assert n.get("/v1/queues").json() == []
        assert n.get("/v1/queues/billing/stats").status_code == 403


def test_error_shapes_and_limits(ops_dsn: str) -> None:
    from tests.ops.conftest import ADMIN_SCOPES, start

    base, stop = start(ops_dsn, max_body_bytes=64 * 1024)
    svc = Service(ops_dsn, base)
    svc.add_key("admin", ADMIN_SCOPES)
    try:
        with svc.client(None) as anon:
            r = anon.get("/v1/queues")
            assert r.status_code == 401 and _error(r)["error"] == "unauthorized"
        with svc.client() as c:
            c.post("/v1/queues", json={"queue": "big"})
            r = c.get("/v1/queues/nope/stats")
            assert r.status_code == 404 and _error(r)["error"] == "not_found"
            r = c.post("/v1/queues", json={"queue": "Bad-Name"})
            assert r.status_code == 422 and _error(r)["error"] == "invalid_request"
            # over the limit: 413 before the body is read
            huge = {"data": {"blob": "x" * 200_000}}
            t0 = time.monotonic()
            r = c.post("/v1/queues/big/messages", json=huge)
            assert r.status_code == 413 and _error(r)["error"] == "too_large"
            assert time.monotonic() - t0 < 5
            # a 422 under the limit never echoes the input back
            r = c.post("/v1/queues/big/messages", json={"data": "y" * 60_000})
            assert r.status_code == 422
            assert len(r.content) < 2000 and "yyyy" not in r.text
            # a database error of the engine keeps the shape too
            r = c.post("/v1/queues/big/ack", json={"token": "00000000-0000-0000-0000-000000000000"})
            assert r.status_code == 409 and set(r.json()) == {"error", "message"}
        assert svc.value("SELECT count(*) FROM mbus.q_big") == 0
    finally:
        stop()


def test_unknown_objects_are_404(service: Service) -> None:
    with service.client() as c:
        c.post("/v1/queues", json={"queue": "known"})
        for method, path, body in (
            ("POST", "/v1/queues/nope/messages", {"data": {}}),
            ("POST", "/v1/queues/nope/messages/batch", {"messages": [{"data": {}}]}),
            ("POST", "/v1/queues/nope/lease", {}),
            ("POST", "/v1/queues/known/lease", {"consumer": "ghost"}),
            ("GET", "/v1/queues/known/dmq/12345", None),
            ("POST", "/v1/queues/known/dmq/12345/replay", None),
            ("DELETE", "/v1/queues/known/dmq/12345", None),
            ("GET", "/v1/streams/groups/ghost", None),
            ("POST", "/v1/streams/groups/ghost/read", {}),
            ("POST", "/v1/streams/groups/ghost/seek", {"start": "now"}),
        ):
            r = c.request(method, path, json=body)
            assert r.status_code == 404, (method, path, r.text)
            assert set(r.json()) == {"error", "message"}
        r = c.post("/v1/streams/groups/ghost/commit", json={"token": "not-a-uuid"})
        assert r.status_code == 422 and r.json()["error"] == "invalid_request"
        assert "token" in r.json()["message"]


def test_deep_json_is_refused_at_post_and_an_unforeseen_failure_keeps_the_one_shape(
    service: Service,
) -> None:
    """A 300-level message is a 422 at post (it used to be stored, then fail every lease with
    a text 500 after the claim had committed). One written by hand still fails the lease (the
    serializer cannot), but as a JSON 500, not a text page."""
    deep: object = {}
    for _ in range(300):
        deep = {"a": deep}
    with service.client() as c:
        assert c.post("/v1/queues", json={"queue": "deep"}).status_code == 201
        r = c.post("/v1/queues/deep/messages", json={"data": deep})
        assert r.status_code == 422 and _error(r)["error"] == "invalid_payload", r.text
        assert c.post("/v1/queues/deep/messages", json={"data": {"n": 1}}).status_code == 201
        service.sql(
            "UPDATE mbus.q_deep SET data = (repeat('{\"a\":', 300) || '1' || repeat('}', 300))"
            "::jsonb"
        )
        r = c.post("/v1/queues/deep/lease", json={"lease_s": 30})
        assert r.status_code == 500 and _error(r)["error"] == "internal_error", r.text


def _concurrent_statuses(service: Service, path: str, body: dict[str, str], n: int) -> list[int]:
    import threading

    codes: list[int] = []
    barrier = threading.Barrier(n)

    def create() -> None:
        with service.client() as c:
            barrier.wait()
            codes.append(c.post(path, json=body).status_code)

    threads = [threading.Thread(target=create) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return sorted(codes)


def test_concurrent_creates_of_one_name_answer_one_201_and_200s(service: Service) -> None:
    """Main: four concurrent queue creates all answered 201, and a group create could answer
    409: a client that treats anything but 200/201 as failure broke."""
    for path, body in (("/v1/queues", {"queue": "race"}), ("/v1/streams/groups", {"group": "g"})):
        assert _concurrent_statuses(service, path, body, 6) == [200] * 5 + [201], path


def test_unknown_queues_and_groups_are_named_404s(service: Service) -> None:
    """Main: a post, ack, nack, extend or bury on a missing queue answered 'function
    mbus.post_nosuch(...) does not exist'; the dmq lists of an unknown queue or group
    answered 200 and nothing."""
    token = {"token": "00000000-0000-0000-0000-000000000000"}
    with service.client() as c:
        calls = [
            ("/v1/queues/nosuch/messages", {"data": {}}),
            ("/v1/queues/nosuch/messages/batch", {"messages": [{"data": {}}]}),
            ("/v1/queues/nosuch/ack", token),
            ("/v1/queues/nosuch/nack", token),
            ("/v1/queues/nosuch/extend", {**token, "lease_s": 5}),
            ("/v1/queues/nosuch/bury", {**token, "reason": "x"}),
        ]
        for path, body in calls:
            r = c.post(path, json=body)
            assert r.status_code == 404, (path, r.text)
            assert _error(r)["message"] == "queue 'nosuch' does not exist", path
        r = c.get("/v1/queues/nosuch/dmq")
        assert r.status_code == 404 and "nosuch" in _error(r)["message"]
        r = c.get("/v1/streams/groups/nosuch/dmq")
        assert r.status_code == 404 and "nosuch" in _error(r)["message"]
        assert c.post("/v1/queues", json={"queue": "known"}).status_code == 201
        assert c.get("/v1/queues/known/dmq").json() == {"items": [], "next_after": None}
