"""/v1/streams over a live server: publish, groups, lag, seek, lease-style reads, scopes."""

from __future__ import annotations

import time

from tests.ops.conftest import Service


def test_publish_read_commit_at_least_once(service: Service) -> None:
    with service.client() as c:
        r = c.post("/v1/streams/groups", json={"group": "billing"})
        assert r.status_code == 201, r.text
        r = c.post(
            "/v1/streams/events/batch",
            json={
                "topic": "orders.created",
                "events": [{"payload": {"n": i}, "key": f"k{i}"} for i in range(5)],
            },
        )
        assert r.status_code == 201, r.text
        ids = r.json()["ids"]
        g = c.get("/v1/streams/groups/billing").json()
        assert g["pending_events"] == 5 and g["lag_s"] >= 0

        first = c.post("/v1/streams/groups/billing/read", json={"limit": 3}).json()
        assert [e["id"] for e in first["events"]] == ids[:3]
        # the slot is leased: another HTTP reader is refused until commit or lease end
        r = c.post("/v1/streams/groups/billing/read", json={})
        assert r.status_code == 409 and r.json()["error"] == "invalid_state"
        r = c.post("/v1/streams/groups/billing/commit", json={"token": first["token"]})
        assert r.status_code == 200 and r.json()["cursor"] == first["cursor"]
        # committing twice is refused: the lease was used
        r = c.post("/v1/streams/groups/billing/commit", json={"token": first["token"]})
        assert r.status_code == 409 and r.json()["error"] == "stale_lease"

        # a lease that ends uncommitted: the same events come again (at least once)
        second = c.post("/v1/streams/groups/billing/read", json={"lease_s": 0.3}).json()
        assert [e["id"] for e in second["events"]] == ids[3:]
        time.sleep(0.4)
        r = c.post("/v1/streams/groups/billing/commit", json={"token": second["token"]})
        assert r.status_code == 409
        # max_events: the old spelling of limit, still accepted
        third = c.post("/v1/streams/groups/billing/read", json={"max_events": 1}).json()
        assert [e["id"] for e in third["events"]] == ids[3:4]
        r = c.post(
            "/v1/streams/groups/billing/extend", json={"token": third["token"], "lease_s": 60}
        )
        assert r.status_code == 200 and r.json()["lease_until"] > third["lease_until"]
        c.post("/v1/streams/groups/billing/commit", json={"token": third["token"]})
        rest = c.post("/v1/streams/groups/billing/read", json={"limit": 10}).json()
        assert [e["id"] for e in rest["events"]] == ids[4:]
        c.post("/v1/streams/groups/billing/commit", json={"token": rest["token"]})
        empty = c.post("/v1/streams/groups/billing/read", json={}).json()
        assert empty == {"token": None, "lease_until": None, "cursor": None, "events": []}
        assert c.get("/v1/streams/groups/billing").json()["pending_events"] == 0
    pending = service.value(
        "SELECT pending_events FROM mbus.group_status() WHERE group_name = 'billing'"
    )
    assert pending == 0


def test_seek_ends_leases_and_replays(service: Service) -> None:
    with service.client() as c:
        c.post("/v1/streams/groups", json={"group": "audit", "start": "beginning"})
        ids = [
            c.post("/v1/streams/events", json={"topic": "t", "payload": i}).json()["ids"][0]
            for i in range(3)
        ]
        batch = c.post("/v1/streams/groups/audit/read", json={"lease_s": 60}).json()
        assert len(batch["events"]) == 3
        g = c.post("/v1/streams/groups/audit/seek", json={"start": str(ids[1])}).json()
        assert g["http_leases"] == [] and g["pending_events"] == 2
        # the lease died with the seek: its commit cannot move the group
        r = c.post("/v1/streams/groups/audit/commit", json={"token": batch["token"]})
        assert r.status_code == 409
        again = c.post("/v1/streams/groups/audit/read", json={}).json()
        assert [e["payload"] for e in again["events"]] == [1, 2]
        r = c.post("/v1/streams/groups/audit/seek", json={"start": "someday"})
        assert r.status_code == 422 and set(r.json()) == {"error", "message"}


def test_slots_dead_letters_and_lag(service: Service) -> None:
    with service.client() as c:
        c.post("/v1/streams/groups", json={"group": "par", "slots": 2})
        c.post(
            "/v1/streams/events/batch",
            json={"topic": "x", "events": [{"payload": i, "key": f"k{i}"} for i in range(8)]},
        )
        g = c.get("/v1/streams/groups/par").json()
        assert [s["slot"] for s in g["slot_status"]] == [0, 1]
        assert sum(s["pending_events"] for s in g["slot_status"]) == 8
        r = c.post("/v1/streams/groups/par/read", json={})
        assert r.status_code == 422 and "slot" in r.json()["message"]
        b0 = c.post("/v1/streams/groups/par/read", json={"slot": 0}).json()
        b1 = c.post("/v1/streams/groups/par/read", json={"slot": 1}).json()  # slots in parallel
        assert len(b0["events"]) + len(b1["events"]) == 8
        # a dead letter made through SQL shows and replays over HTTP
        event_id = b0["events"][0]["id"]
        service.sql("UPDATE mbus.stream_groups SET max_attempts = 1 WHERE name = 'par'")
        service.sql("SELECT mbus.retry_event('par', %s, 'boom')", (event_id,))
        [dead] = c.get("/v1/streams/groups/par/dmq").json()
        assert (dead["event_id"], dead["last_error"]) == (event_id, "boom")
        group = c.get("/v1/streams/groups/par").json()
        assert group["dmq"] == group["dead_letters"] == 1  # dead_letters: the old spelling
        # the old path (deprecated) answers the same
        assert c.get("/v1/streams/groups/par/dead-letters").json() == [dead]
        r = c.post(f"/v1/streams/groups/par/dmq/{event_id}/replay")
        assert r.status_code == 204
        assert c.get("/v1/streams/groups/par/dmq").json() == []
        service.sql("SELECT mbus.retry_event('par', %s, 'boom again')", (event_id,))
        assert len(c.get("/v1/streams/groups/par/dmq").json()) == 1
        assert c.post(f"/v1/streams/groups/par/dead-letters/{event_id}/replay").status_code == 204
        assert c.get("/v1/streams/groups/par/dmq").json() == []
        assert c.get("/v1/streams/groups/par").json()["retries"] == 1


def test_stream_scopes(service: Service) -> None:
    with service.client() as c:
        c.post("/v1/streams/groups", json={"group": "shipping"})
        c.post("/v1/streams/groups", json={"group": "fraud"})
    service.add_key("pub", ["streams:post:orders.*"])
    service.add_key("shipper", ["streams:consume:shipping"])
    with service.client("pub") as p:
        assert (
            p.post("/v1/streams/events", json={"topic": "orders.paid", "payload": 1}).status_code
            == 201
        )
        assert (
            p.post("/v1/streams/events", json={"topic": "users.new", "payload": 1}).status_code
            == 403
        )
        assert p.post("/v1/streams/groups/shipping/read", json={}).status_code == 403
    with service.client("shipper") as s:
        assert [g["name"] for g in s.get("/v1/streams/groups").json()] == ["shipping"]
        assert s.post("/v1/streams/groups/shipping/read", json={}).status_code == 200
        assert s.post("/v1/streams/groups/fraud/read", json={}).status_code == 403
        assert s.post("/v1/streams/groups/shipping/seek", json={"start": "now"}).status_code == 403


def test_concurrent_http_readers_get_one_lease(service: Service) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with service.client() as c:
        c.post("/v1/streams/groups", json={"group": "race"})
        c.post(
            "/v1/streams/events/batch",
            json={"topic": "t", "events": [{"payload": i} for i in range(20)]},
        )

    def read(_: int) -> tuple[int, int]:
        with service.client() as c:
            r = c.post("/v1/streams/groups/race/read", json={"limit": 100})
            return r.status_code, len(r.json().get("events", []))

    with ThreadPoolExecutor(8) as pool:
        results = sorted(pool.map(read, range(8)))
    assert results == [(200, 20)] + [(409, 0)] * 7
    assert service.value("SELECT count(*) FROM mbus.http_stream_leases") == 1


def test_a_nul_byte_in_a_topic_is_the_input_s_fault(service: Service) -> None:
    # no text of the log can hold a NUL: the topic's schema refuses it, a 422, never a 500
    with service.client() as c:
        before = c.get("/v1/streams/groups").status_code
        r = c.post("/v1/streams/events", json={"topic": "t\u0000x", "payload": []})
        assert r.status_code == 422, r.text
        assert r.json()["error"] == "invalid_request"
        assert "NUL" in r.json()["message"]
        assert c.get("/v1/streams/groups").status_code == before
