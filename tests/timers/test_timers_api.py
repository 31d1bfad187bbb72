"""The HTTP API (FastAPI under uvicorn on 127.0.0.1) and its rules, per authenticated client."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest
import uvicorn

from pgmbus.http import ServiceConfig, create_app
from pgmbus.timers import store as sync_store
from pgmbus.timers.dispatcher import DispatcherConfig
from tests.timers.conftest import LOCAL, Env, ScriptedServer, wait_until


@dataclass
class Api:
    base: str
    env: Env
    app: Any

    def client(self, key: str | None = None) -> httpx.Client:
        headers = {"authorization": f"Bearer {key or self.env.client.api_key}"}
        return httpx.Client(base_url=self.base, headers=headers, timeout=10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_api(env: Env, **kw: Any) -> tuple[Api, Callable[[], None]]:
    settings: dict[str, Any] = {"run_dispatcher": False, "batch_max_wait_s": 0.02, **kw}
    config = ServiceConfig(dsn=env.dsn, **settings)
    app = create_app(config)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, timeout=10)

    def stop() -> None:
        server.should_exit = True
        thread.join(10)

    return Api(f"http://127.0.0.1:{port}", env, app), stop


@pytest.fixture
def api(env: Env) -> Iterator[Api]:
    a, stop = start_api(env)
    yield a
    stop()


def body(key: str, run_at: datetime | None = None, **kw: Any) -> dict[str, Any]:
    when = run_at or datetime.now(UTC) + timedelta(hours=1)
    return {
        "group_key": "orders",
        "event_key": key,
        "run_at": when.isoformat(),
        "url": "https://example.com/hook",
        **kw,
    }


def test_authentication_is_required(api: Api) -> None:
    with httpx.Client(base_url=api.base) as anon:
        assert anon.get("/v1/callbacks").status_code == 401
    with api.client("pmk_wrong") as wrong:
        assert wrong.post("/v1/callbacks", json=body("e")).status_code == 401


def test_create_is_idempotent_and_fills_defaults(api: Api) -> None:
    with api.client() as c:
        r = c.post("/v1/callbacks", json=body("e1", context={"n": 1}))
        assert r.status_code == 201, r.text
        cb = r.json()
        assert cb["status"] == "pending" and cb["context"] == {"n": 1}
        assert cb["retry"] == {
            "fast_retries": 2,
            "kind": "constant",
            "delay_s": 60.0,
            "factor": 2.0,
            "max_delay_s": 3600.0,
        }
        again = c.post("/v1/callbacks", json=body("e1", context={"n": 2}))
        assert again.status_code == 200 and again.json()["id"] == cb["id"]
        assert again.json()["context"] == {"n": 1}


@pytest.mark.parametrize(
    "change",
    [
        {"url": "ftp://example.com/x"},
        {"run_at": "2030-01-01T00:00:00"},  # no offset
        {"retry": {"kind": "linear"}},
        {"retry": {"fast_retries": 11}},
        {"event_key": "a/b"},
        {"unknown": 1},
    ],
)
def test_invalid_bodies_are_refused(api: Api, change: dict[str, Any]) -> None:
    with api.client() as c:
        assert c.post("/v1/callbacks", json={**body("e"), **change}).status_code == 422


def test_clients_see_only_their_own_callbacks(api: Api) -> None:
    other = api.env.add_client("other")
    with api.client() as c, api.client(other.api_key) as o:
        c.post("/v1/callbacks", json=body("mine")).raise_for_status()
        assert o.get("/v1/callbacks/orders/mine").status_code == 404
        assert o.get("/v1/callbacks").json()["items"] == []
        assert o.post("/v1/callbacks/orders/mine/cancel").status_code == 404
        # the same key is a different callback for another client
        assert o.post("/v1/callbacks", json=body("mine")).status_code == 201
        assert (
            c.get("/v1/callbacks/orders/mine").json()["id"]
            != o.get("/v1/callbacks/orders/mine").json()["id"]
        )


def test_list_filters_and_pages(api: Api) -> None:
    with api.client() as c:
        for i in range(5):
            c.post("/v1/callbacks", json={**body(f"e{i}"), "group_key": f"g{i % 2}"})
        c.post("/v1/callbacks/g0/e0/cancel").raise_for_status()
        page = c.get("/v1/callbacks", params={"limit": 2}).json()
        assert [x["event_key"] for x in page["items"]] == ["e0", "e1"]
        page2 = c.get("/v1/callbacks", params={"limit": 2, "after": page["next_after"]}).json()
        assert [x["event_key"] for x in page2["items"]] == ["e2", "e3"]
        last = c.get("/v1/callbacks", params={"limit": 2, "after": page2["next_after"]}).json()
        assert [x["event_key"] for x in last["items"]] == ["e4"] and last["next_after"] is None
        g0 = c.get("/v1/callbacks", params={"group_key": "g0", "status": "pending"}).json()
        assert [x["event_key"] for x in g0["items"]] == ["e2", "e4"]
        assert c.get("/v1/callbacks", params={"status": "bogus"}).status_code == 422


def test_update_rules(api: Api) -> None:
    with api.client() as c:
        c.post("/v1/callbacks", json=body("e")).raise_for_status()
        new_at = (datetime.now(UTC) + timedelta(hours=2)).replace(microsecond=0)
        r = c.patch(
            "/v1/callbacks/orders/e", json={"run_at": new_at.isoformat(), "context": {"v": 2}}
        )
        assert r.status_code == 200
        assert datetime.fromisoformat(r.json()["run_at"]) == new_at
        assert r.json()["context"] == {"v": 2}
        c.post("/v1/callbacks/orders/e/cancel").raise_for_status()
        r = c.patch("/v1/callbacks/orders/e", json={"url": "https://example.com/2"})
        assert r.status_code == 409 and r.json()["error"] == "invalid_state"
        r = c.patch(
            "/v1/callbacks/orders/e",
            json={"url": "https://example.com/2", "i_ensure_pending": True},
        )
        assert r.status_code == 200 and r.json()["status"] == "pending"
        assert c.patch("/v1/callbacks/orders/nope", json={}).status_code == 404


def test_cancel_and_delete_rules(api: Api) -> None:
    with api.client() as c:
        soon = datetime.now(UTC) + timedelta(seconds=30)
        c.post("/v1/callbacks", json=body("soon", run_at=soon)).raise_for_status()
        c.post("/v1/callbacks", json=body("later")).raise_for_status()
        assert c.delete("/v1/callbacks/orders/soon").status_code == 409
        assert c.delete("/v1/callbacks/orders/soon", params={"force": "true"}).status_code == 204
        assert c.get("/v1/callbacks/orders/soon").status_code == 404
        assert c.delete("/v1/callbacks/orders/later").status_code == 204
        c.post("/v1/callbacks", json=body("c")).raise_for_status()
        assert c.post("/v1/callbacks/orders/c/cancel").json()["status"] == "cancelled"
        assert c.post("/v1/callbacks/orders/c/cancel").status_code == 409
        hist = c.get("/v1/callbacks/orders/soon/history").json()
        assert hist["callback"] is None
        assert [h["action"] for h in hist["changes"]] == ["create", "delete"]
        hist = c.get("/v1/callbacks/orders/c/history").json()
        assert [h["action"] for h in hist["changes"]] == ["create", "cancel"]
        assert c.get("/v1/callbacks/orders/never/history").status_code == 404


def test_schedules_create_list_pause_resume_delete(api: Api) -> None:
    with api.client() as c:
        cron = {
            "schedule_key": "daily",
            "cron": "30 9 * * *",
            "timezone": "Europe/Berlin",
            "url": "https://example.com/daily",
        }
        r = c.post("/v1/schedules", json=cron)
        assert r.status_code == 201, r.text
        assert c.post("/v1/schedules", json=cron).status_code == 200
        every = {"schedule_key": "tick", "interval_s": 60, "url": "https://example.com/t"}
        assert c.post("/v1/schedules", json=every).status_code == 201
        assert (
            c.post(
                "/v1/schedules", json={**every, "schedule_key": "x", "cron": "* * * * *"}
            ).status_code
            == 422
        )
        assert (
            c.post(
                "/v1/schedules", json={**cron, "schedule_key": "bad", "cron": "61 * * * *"}
            ).status_code
            == 422
        )
        assert (
            c.post(
                "/v1/schedules", json={**cron, "schedule_key": "tz", "timezone": "Mars/Base"}
            ).status_code
            == 422
        )
        keys = [s["schedule_key"] for s in c.get("/v1/schedules").json()]
        assert keys == ["daily", "tick"]
        assert c.post("/v1/schedules/tick/pause").json()["paused"] is True
        assert c.post("/v1/schedules/tick/resume").json()["paused"] is False
        assert c.delete("/v1/schedules/tick").status_code == 204
        assert c.post("/v1/schedules/tick/pause").status_code == 404
        assert [s["schedule_key"] for s in c.get("/v1/schedules").json()] == ["daily"]


def test_openapi_is_served(api: Api) -> None:
    with httpx.Client(base_url=api.base) as anon:
        assert anon.get("/docs").status_code == 200
        spec = anon.get("/openapi.json").json()
    for path in (
        "/v1/callbacks",
        "/v1/callbacks/{group_key}/{event_key}",
        "/v1/callbacks/{group_key}/{event_key}/cancel",
        "/v1/callbacks/{group_key}/{event_key}/history",
        "/v1/schedules",
    ):
        assert path in spec["paths"]


def _create_concurrently(api: Api, n: int) -> list[int]:
    async def go() -> list[int]:
        headers = {"authorization": f"Bearer {api.env.client.api_key}"}
        async with httpx.AsyncClient(base_url=api.base, headers=headers, timeout=20) as c:
            rs = await asyncio.gather(
                *(c.post("/v1/callbacks", json=body(f"b{i}")) for i in range(n))
            )
        return [r.status_code for r in rs]

    return asyncio.run(go())


def test_creates_are_written_in_batches(api: Api) -> None:
    codes = _create_concurrently(api, 60)
    assert codes == [201] * 60
    batches = api.app.state.timers.batcher.batches
    assert 1 <= batches < 30  # requests share writes
    n = api.env.sql("SELECT count(*) FROM mbus.timer_callbacks")[0][0]
    assert n == 60


def test_batch_size_one_writes_each_create_alone(env: Env) -> None:
    api, stop = start_api(env, batch_max_items=1)
    try:
        assert _create_concurrently(api, 20) == [201] * 20
        assert api.app.state.timers.batcher.batches == 20
    finally:
        stop()


def test_serve_with_dispatcher_delivers_end_to_end(
    env: Env, http_server: Callable[..., ScriptedServer]
) -> None:
    target = http_server()
    config = DispatcherConfig(poll_interval_s=0.05, schedules=False)
    api, stop = start_api(env, run_dispatcher=True, dispatcher=config, guard=LOCAL)
    try:
        with api.client() as c:
            r = c.post(
                "/v1/callbacks",
                json={**body("now", run_at=datetime.now(UTC)), "url": target.url + "/cb"},
            )
            assert r.status_code == 201
            target.wait_for(1)
            deadline = time.time() + 10
            while c.get("/v1/callbacks/orders/now").json()["status"] != "notified":
                assert time.time() < deadline
                time.sleep(0.05)
            hist = c.get("/v1/callbacks/orders/now/history").json()
            assert [a["outcome"] for a in hist["attempts"]] == ["ok"]
            assert set(hist["attempts"][0]) == {
                "attempt",
                "call",
                "dispatcher",
                "started_at",
                "finished_at",
                "outcome",
                "status_code",
                "error",
            }
        with psycopg.connect(env.dsn) as conn:  # the same history, typed
            typed = sync_store.history(conn, env.client.id, "orders", "now")
        [attempt] = typed.attempts
        assert (attempt.attempt, attempt.outcome, attempt.status_code) == (1, "ok", 200)
        assert typed.callback is not None and typed.callback.status == "notified"
    finally:
        stop()


def test_concurrent_creates_of_one_key_create_it_once(env: Env) -> None:
    api, stop = start_api(env, batch_max_items=1)  # every request in its own transaction
    try:

        async def go() -> list[httpx.Response]:
            headers = {"authorization": f"Bearer {env.client.api_key}"}
            async with httpx.AsyncClient(base_url=api.base, headers=headers, timeout=20) as c:
                return list(
                    await asyncio.gather(
                        *(c.post("/v1/callbacks", json=body("same")) for _ in range(20))
                    )
                )

        responses = asyncio.run(go())
    finally:
        stop()
    assert sorted(r.status_code for r in responses) == [200] * 19 + [201]
    assert len({r.json()["id"] for r in responses}) == 1
    assert env.sql("SELECT count(*) FROM mbus.timer_change_log WHERE action = 'create'")[0][0] == 1


def test_a_schedule_posts_to_a_queue_with_the_scope_to_post_there(env: Env) -> None:
    api, stop = start_api(env, auth_cache_s=0)  # scopes change during the test
    try:
        env.sql("SELECT mbus.create_queue('mail')")
        every = {"schedule_key": "digest", "interval_s": 60, "target": {"queue": "mail"}}
        hook = {
            "schedule_key": "hook",
            "interval_s": 60,
            "target": {"url": "https://example.com/h"},
        }
        with api.client() as c:
            r = c.post("/v1/schedules", json=every)
            assert r.status_code == 403, r.text  # the key may not post to mail
            env.sql("SELECT mbus.api_set_scopes('acme', %s)", (["queues:post:mail"],))
            r = c.post("/v1/schedules", json=every)
            assert r.status_code == 201, r.text
            got = r.json()
            assert got["target"] == {"queue": "mail"} and got["queue"] == "mail"
            assert got["url"] is None
            assert c.post("/v1/schedules", json=hook).json()["target"] == hook["target"]
            for bad in (
                {**every, "url": "https://example.com/x"},
                {**every, "target": {}},
                {**every, "target": {"queue": "mail", "url": "https://example.com/x"}},
                {**every, "target": {"queue": "Bad-Name"}},
            ):
                r = c.post("/v1/schedules", json={**bad, "schedule_key": "x"})
                assert r.status_code == 422, (bad, r.text)
            env.sql("SELECT mbus.api_set_scopes('acme', %s)", (["queues:post:*"],))
            missing = {**every, "schedule_key": "y", "target": {"queue": "nope"}}
            r = c.post("/v1/schedules", json=missing)
            assert r.status_code == 422 and "does not exist" in r.text, r.text
            listed = {s["schedule_key"]: s["target"] for s in c.get("/v1/schedules").json()}
            assert listed == {"digest": {"queue": "mail"}, "hook": hook["target"]}
    finally:
        stop()
