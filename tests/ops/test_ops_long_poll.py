"""Long-polled leases (`wait_s`) on a live service: idle waits starve no one, and a wait whose
client hung up claims nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.ops.conftest import ADMIN_SCOPES, Service, start


@pytest.fixture
def small(ops_dsn: str) -> Iterator[Service]:
    """A service whose bus pool (4) is smaller than the long-polls the tests open."""
    base, stop = start(ops_dsn, pool_size=4, max_listening_waits=2)
    svc = Service(ops_dsn, base)
    svc.add_key("admin", ADMIN_SCOPES)
    try:
        yield svc
    finally:
        stop()


def test_idle_long_polls_delay_no_other_call(small: Service) -> None:
    """Eight 6-second waits on an empty queue, more than the pool holds: a post to another
    queue (and a short lease) answers while every one of them still waits; then one post to
    the waited queue is claimed by exactly one of them."""
    with small.client() as http:
        for q in ("idle", "busy"):
            assert http.post("/v1/queues", json={"queue": q}).status_code in (200, 201)
    answers: list[list[dict[str, object]]] = []

    def wait() -> None:
        with small.client() as http:
            r = http.post("/v1/queues/idle/lease", json={"wait_s": 6, "lease_s": 30})
            assert r.status_code == 200, r.text
            answers.append(r.json()["messages"])

    waits = [threading.Thread(target=wait) for _ in range(8)]
    for t in waits:
        t.start()
    time.sleep(1.0)  # every wait is in its loop (LISTENing or polling)
    with small.client() as http:
        assert http.post("/v1/queues/busy/messages", json={"data": {"n": 1}}).status_code == 201
        got = http.post("/v1/queues/busy/lease", json={"lease_s": 30}).json()["messages"]
        assert [m["data"] for m in got] == [{"n": 1}]
        assert answers == [], "a post or a lease waited for the long-polls"
        assert http.post("/v1/queues/idle/messages", json={"data": {"n": 2}}).status_code == 201
    for t in waits:
        t.join(15)
    assert sorted(len(a) for a in answers) == [0] * 7 + [1]


def test_a_long_poll_whose_client_hung_up_claims_nothing(small: Service) -> None:
    """The client gives up after 0.5 s of a 20 s wait; a message posted afterwards is not
    leased by the abandoned wait: the next consumer gets it at its first attempt."""
    with small.client() as http:
        assert http.post("/v1/queues", json={"queue": "lp"}).status_code in (200, 201)
    with small.client() as http, pytest.raises(httpx.ReadTimeout):
        http.post("/v1/queues/lp/lease", json={"wait_s": 20, "lease_s": 600}, timeout=0.5)
    time.sleep(0.3)
    with small.client() as http:
        assert http.post("/v1/queues/lp/messages", json={"data": {"n": 1}}).status_code == 201
        time.sleep(1.5)  # the abandoned wait has been woken (NOTIFY) and polled since
        got = http.post("/v1/queues/lp/lease", json={"lease_s": 30}).json()["messages"]
        assert [(m["data"], m["attempts"]) for m in got] == [({"n": 1}, 1)]
