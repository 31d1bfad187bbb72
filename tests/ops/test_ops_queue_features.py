"""Queue features over a live server: post with dedupe_key/consume_after, pause, resume, purge,
dmq delete through mbus.dmq_delete, and the posted/consumed counters on /metrics."""

from __future__ import annotations

from tests.ops.conftest import Service
from tests.ops.test_ops_metrics import get, scrape


def test_post_dedupe_and_consume_after(service: Service) -> None:
    with service.client() as c:
        c.post("/v1/queues", json={"queue": "mail"})
        r = c.post("/v1/queues/mail/messages", json={"data": {"n": 1}, "dedupe_key": "k"})
        assert r.status_code == 201, r.text
        [first] = r.json()["iids"]
        r = c.post("/v1/queues/mail/messages", json={"data": {"n": 2}, "dedupe_key": "k"})
        assert r.json()["iids"] == [first]
        r = c.post("/v1/queues/mail/messages", json={"data": {"n": 3}, "consume_after": [first]})
        assert r.status_code == 201, r.text
        for bad in ({"dedupe_key": ""}, {"consume_after": "x"}, {"consume_after": [""]}):
            r = c.post("/v1/queues/mail/messages", json={"data": {}} | bad)
            assert r.status_code == 422, (bad, r.text)
    assert service.value("SELECT count(*) FROM mbus.q_mail") == 2
    waits = service.value("SELECT consume_after FROM mbus.q_mail WHERE data->>'n' = '3'")
    assert waits == [first]


def test_pause_resume_purge_and_dmq_delete(service: Service) -> None:
    with service.client() as c:
        c.post("/v1/queues", json={"queue": "jobs"})
        r = c.post("/v1/queues/jobs/pause", json={})
        assert r.json() == {"queue": "jobs", "consumer": None, "paused": True, "changed": True}
        assert c.post("/v1/queues/jobs/pause", json={}).json()["changed"] is False
        c.post(
            "/v1/queues/jobs/messages/batch",
            json={"messages": [{"data": {"n": i}} for i in range(3)]},
        )
        assert c.post("/v1/queues/jobs/lease", json={"amount": 3}).json() == {"messages": []}
        [stats] = c.get("/v1/queues/jobs/stats").json()
        assert (stats["paused"], stats["posted"], stats["ready"]) == (True, 3, 3)
        r = c.post("/v1/queues/jobs/resume", json={"consumer": "default"})
        assert r.json()["changed"] is False  # the consumer was not paused: the queue is
        assert c.post("/v1/queues/jobs/resume", json={}).json()["changed"] is True
        [m] = c.post("/v1/queues/jobs/lease", json={"amount": 1}).json()["messages"]
        dead = c.post("/v1/queues/jobs/bury", json={"token": m["token"], "reason": "x"}).json()
        # purge: a careless call purges nothing
        r = c.post("/v1/queues/jobs/purge", json={"confirm": "job"})
        assert r.status_code == 422 and "nothing purged" in r.json()["message"]
        assert (
            c.post(
                "/v1/queues/jobs/purge", json={"confirm": "jobs", "consumer": "nobody"}
            ).status_code
            == 404
        )
        assert service.value("SELECT count(*) FROM mbus.q_jobs") == 2
        assert c.post("/v1/queues/jobs/purge", json={"confirm": "jobs"}).json() == {"purged": 2}
        assert c.delete(f"/v1/queues/jobs/dmq/{dead['dmq_id']}").status_code == 204
        assert c.delete(f"/v1/queues/jobs/dmq/{dead['dmq_id']}").status_code == 404
        assert c.post("/v1/queues/nosuch/pause", json={}).status_code == 404
    assert service.value("SELECT count(*) FROM mbus.dmq") == 0
    viewer = service.add_key("viewer", ["queues:read:*"])
    assert viewer
    with service.client("viewer") as c:
        assert c.post("/v1/queues/jobs/pause", json={}).status_code == 403
    assert service.value("SELECT count(*) FROM mbus.queue_pause") == 0


def test_counters_and_paused_on_metrics(service: Service) -> None:
    service.sql("SELECT mbus.create_queue('orders', 1)")
    service.sql("SELECT mbus.create_consumer('orders', 'big', $$(t.data->>'n')::int > 1$$)")
    for n in range(4):
        service.sql("SELECT mbus.post_orders(jsonb_build_object('n', %s))", (n,))
    service.sql("SELECT count(*) FROM mbus.consumen('orders', 'default', 3)")
    service.sql("SELECT mbus.pause_queue('orders', 'big')")
    m = scrape(service.base + "/metrics")
    assert get(m, "pgmbus_queue_posted_total", queue="orders") == 4
    assert get(m, "pgmbus_queue_consumer_posted_total", queue="orders", consumer="default") == 4
    assert get(m, "pgmbus_queue_consumer_posted_total", queue="orders", consumer="big") == 2
    assert get(m, "pgmbus_queue_consumer_consumed_total", queue="orders", consumer="default") == 3
    assert get(m, "pgmbus_queue_consumer_consumed_total", queue="orders", consumer="big") == 0
    assert get(m, "pgmbus_queue_paused", queue="orders", consumer="big") == 1
    assert get(m, "pgmbus_queue_paused", queue="orders", consumer="default") == 0
    for q, c, posted, consumed in service.sql("SELECT * FROM mbus.queue_totals"):
        if c is not None:
            lab = {"queue": q, "consumer": c}
            assert get(m, "pgmbus_queue_consumer_posted_total", **lab) == posted
            assert get(m, "pgmbus_queue_consumer_consumed_total", **lab) == consumed


def test_post_priority(service: Service) -> None:
    with service.client() as c:
        c.post("/v1/queues", json={"queue": "urgent"})
        for n, p in ((1, 0), (2, 5), (3, None)):
            body = {"data": {"n": n}} | ({} if p is None else {"priority": p})
            assert c.post("/v1/queues/urgent/messages", json=body).status_code == 201
        for bad in (-1, 32768, "high"):
            r = c.post("/v1/queues/urgent/messages", json={"data": {}, "priority": bad})
            assert r.status_code == 422, (bad, r.text)
        got = c.post("/v1/queues/urgent/lease", json={"amount": 3}).json()["messages"]
        assert [m["data"]["n"] for m in got] == [2, 1, 3]


def test_batch_priority_and_the_dmq_keeps_it(service: Service) -> None:
    with service.client() as c:
        c.post("/v1/queues", json={"queue": "prio"})
        r = c.post(
            "/v1/queues/prio/messages/batch",
            json={"messages": [{"data": {"n": 1}}, {"data": {"n": 2}, "priority": 9}]},
        )
        assert r.status_code == 201, r.text
        bad = {"messages": [{"data": {"n": 3}, "priority": 40000}]}
        assert c.post("/v1/queues/prio/messages/batch", json=bad).status_code == 422
        [m] = c.post("/v1/queues/prio/lease", json={"limit": 1}).json()["messages"]
        assert m["data"] == {"n": 2}
        dead = c.post("/v1/queues/prio/bury", json={"token": m["token"], "reason": "x"}).json()
        [item] = c.get("/v1/dmq", params={"queue": "prio"}).json()["items"]
        assert (item["dmq_id"], item["priority"]) == (dead["dmq_id"], 9)
    assert service.value("SELECT count(*) FROM mbus.q_prio") == 1  # the refused batch posted none
