"""PGMB's live listeners: Server-Sent Events of subscriptions from a real ``pgmbus serve``.

Seed 003: "if you have 100 users listening to live updates on a chat room, rather than creating
100 unique subscriptions, PGMB automatically enforces a single subscription for that chat room,
and all 100 users will receive events from that single subscription." -- "Subscriptions can
also be automatically expired after a certain period of inactivity (useful for temporary
consumers like HTTP SSE connections)." -- "`l3` is a fire-and-forget listener, so it just
receives the event and processes it, we don't expect any contention from this."
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest
import uvicorn

from pgmbus import streams
from pgmbus.http import ServiceConfig, create_app
from tests.ops.conftest import ADMIN_SCOPES, Service, free_port, wait_until

ROOM = "s.params @> jsonb_build_object('room', e.payload->'room')"


class Live(Service):
    """A service whose application object the test can look into (the listener hub)."""

    app: Any = None

    @property
    def hub(self) -> Any:
        return self.app.state.pgmbus.listeners


@pytest.fixture
def live(db_dsn: str) -> Iterator[Live]:
    app = create_app(ServiceConfig(dsn=db_dsn, run_dispatcher=False, pool_size=4))
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started)
    svc = Live(db_dsn, f"http://127.0.0.1:{port}")
    svc.app = app
    svc.add_key("admin", ADMIN_SCOPES)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        streams.create_group(conn, "chat", start="now")
    try:
        yield svc
    finally:
        server.should_exit = True
        thread.join(10)


def _subscribe(svc: Service, room: str, **extra: Any) -> int:
    with svc.client() as c:
        r = c.post(
            "/v1/streams/groups/chat/subscriptions",
            json={"condition": ROOM, "params": {"room": room}, **extra},
        )
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


class Sse:
    """One SSE client: reads frames in a task into a list."""

    def __init__(self, client: httpx.AsyncClient, sid: int) -> None:
        self.client = client
        self.sid = sid
        self.events: list[dict[str, Any]] = []
        self.kinds: list[str] = []
        self.ready = asyncio.Event()
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async with self.client.stream("GET", f"/v1/streams/subscriptions/{self.sid}/events") as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            kind, data = "message", None
            async for line in r.aiter_lines():
                if line.startswith(": subscription"):
                    self.ready.set()
                elif line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    data = line[6:]
                elif line == "" and data is not None:
                    self.kinds.append(kind)
                    if kind == "message":
                        self.events.append(json.loads(data))
                    else:
                        return
                    kind, data = "message", None

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def _client(svc: Service) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=svc.base,
        headers={"authorization": f"Bearer {svc.keys['admin']}"},
        timeout=httpx.Timeout(15, read=None),
        limits=httpx.Limits(max_connections=200, max_keepalive_connections=0),
    )


async def _until(check: Any, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


def _publish(dsn: str, events: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> list[int]:
    with psycopg.connect(dsn) as conn:
        ids = [streams.publish(conn, t, p, **kw) for t, p, kw in events]
        conn.commit()
    return ids


def test_one_hundred_listeners_share_one_subscription_and_one_reader(live: Live) -> None:
    room_a = _subscribe(live, "a")
    assert _subscribe(live, "a") == room_a  # identical subscriptions are one
    room_b = _subscribe(live, "b")
    assert live.value("SELECT count(*) FROM mbus.subscriptions") == 2

    async def main() -> None:
        async with _client(live) as client:
            a = [Sse(client, room_a) for _ in range(100)]
            b = Sse(client, room_b)
            await asyncio.wait_for(asyncio.gather(*(s.ready.wait() for s in [*a, b])), 30)
            assert live.hub.listener_count == 101
            reads_before = live.hub.reads
            ids = _publish(
                live.dsn,
                [("chat", {"room": "a", "n": i}, {}) for i in range(5)]
                + [("chat", {"room": "b", "n": 9}, {})]
                + [("dm", {"n": "direct"}, {"subscription_id": room_b})],
            )
            await _until(lambda: all(len(s.events) == 5 for s in a) and len(b.events) == 2)
            await asyncio.sleep(0.3)  # nothing more comes
            for s in a:
                assert [e["id"] for e in s.events] == ids[:5]
                assert [e["payload"]["n"] for e in s.events] == [0, 1, 2, 3, 4]
                assert {e["subscription_id"] for e in s.events} == {room_a}
            assert [e["id"] for e in b.events] == ids[5:]
            # one read of the log served all 101 listeners (not one per listener)
            assert 1 <= live.hub.reads - reads_before <= 3
            for s in [*a, b]:
                await s.close()
            await _until(lambda: live.hub.listener_count == 0)

    asyncio.run(main())


def test_listeners_never_hold_back_the_groups_reliable_reader(live: Live) -> None:
    room = _subscribe(live, "a")
    cursor = live.value("SELECT mbus.group_cursor('chat')")

    async def main() -> None:
        async with _client(live) as client:
            sse = Sse(client, room)
            await asyncio.wait_for(sse.ready.wait(), 10)
            # a reliable reader of the same group holds its lock mid-batch, not committing
            with psycopg.connect(live.dsn) as reliable:
                streams.read_subscriptions(reliable, "chat")
                first = _publish(live.dsn, [("chat", {"room": "a"}, {})])
                await _until(lambda: [e["id"] for e in sse.events] == first)
                reliable.rollback()
            # the listener moved no cursor: the reliable reader still gets the event, once
            with psycopg.connect(live.dsn) as reliable:
                assert streams.group_cursor(reliable, "chat") == cursor
                batch = streams.read_subscriptions(reliable, "chat")
                assert [e.id for e in batch.events] == first
                assert batch.cursor is not None
                streams.commit(reliable, "chat", batch.cursor)
                reliable.commit()
            await sse.close()

    asyncio.run(main())


def test_a_listener_that_does_not_read_is_dropped_not_waited_for(live: Live) -> None:
    room = _subscribe(live, "a")
    live.hub.queue_size = 10  # for the listeners connected from now on
    # the frame bound is tested here: a 1.5 MB burst must not trip the bound on bytes
    live.hub.max_listener_bytes = 16 << 20
    big = "x" * 250_000

    async def main() -> None:
        async with _client(live) as client:
            fast = Sse(client, room)
            await asyncio.wait_for(fast.ready.wait(), 10)
            # a client that opens the stream and then never reads (a small receive buffer)
            stuck = socket.socket()
            stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stuck.connect(("127.0.0.1", int(live.base.rsplit(":", 1)[1])))
            stuck.sendall(
                f"GET /v1/streams/subscriptions/{room}/events HTTP/1.1\r\n"
                f"host: 127.0.0.1\r\nauthorization: Bearer {live.keys['admin']}\r\n\r\n".encode()
            )
            try:
                await _until(lambda: live.hub.listener_count == 2)
                ids: list[int] = []
                for _ in range(8):  # bursts smaller than a listener's queue
                    ids += _publish(
                        live.dsn,
                        [("chat", {"room": "a", "n": i, "pad": big}, {}) for i in range(6)],
                    )
                    want = len(ids)
                    await _until(lambda: len(fast.events) == want, within=30)  # noqa: B023
                # the stuck one was dropped; the reader went on for the one that reads
                assert live.hub.listener_count == 1
                assert [e["id"] for e in fast.events] == ids
            finally:
                stuck.close()
            await fast.close()

    asyncio.run(main())


def test_inactive_subscriptions_expire_and_their_listeners_end(live: Live) -> None:
    room = _subscribe(live, "a", expires_after_s=0.6)
    other = _subscribe(live, "b", expires_after_s=0.6)

    async def main() -> None:
        async with _client(live) as client:
            sse = Sse(client, room)
            await asyncio.wait_for(sse.ready.wait(), 10)
            await asyncio.sleep(1.5)  # listened to: touched, kept
            report = live.value("SELECT mbus.maintain()")
            assert report["expired_subscriptions"] == 1  # only the one nobody listens to
            ids = {r[0] for r in live.sql("SELECT id FROM mbus.subscriptions")}
            assert ids == {room}
            assert other not in ids
            await sse.close()
            await _until(lambda: live.hub.listener_count == 0)
            await asyncio.sleep(1.0)
            assert live.value("SELECT mbus.maintain()")["expired_subscriptions"] == 1
            r = await client.get(f"/v1/streams/subscriptions/{room}/events")
            assert r.status_code == 404 and r.json()["error"] == "not_found"
            # a subscription removed while listened to ends its listeners' streams
            again = _subscribe(live, "c", expires_after_s=0.6)  # (touched every 0.2 s)
            sse = Sse(client, again)
            await asyncio.wait_for(sse.ready.wait(), 10)
            live.sql("SELECT mbus.unsubscribe(%s)", (again,))
            await asyncio.wait_for(sse.task, 20)
            assert sse.kinds == ["end"]

    asyncio.run(main())


def test_directed_and_future_events_over_http(live: Live) -> None:
    room_a, room_b = _subscribe(live, "a"), _subscribe(live, "b")

    async def main() -> None:
        async with _client(live) as client:
            a, b = Sse(client, room_a), Sse(client, room_b)
            await asyncio.wait_for(asyncio.gather(a.ready.wait(), b.ready.wait()), 10)
            due = datetime.now(UTC) + timedelta(seconds=1)
            r = await client.post(
                "/v1/streams/events",
                json={
                    "topic": "dm",
                    "payload": {"room": "b"},
                    "subscription_id": room_a,
                    "delayed_until": due.isoformat(),
                },
            )
            assert r.status_code == 201, r.text
            [later] = r.json()["ids"]
            r = await client.post(
                "/v1/streams/events/batch",
                json={
                    "topic": "dm",
                    "events": [{"payload": {"i": 1}}, {"payload": {"i": 2}}],
                    "subscription_id": room_b,
                },
            )
            assert r.status_code == 201, r.text
            to_b = r.json()["ids"]
            now = _publish(live.dsn, [("chat", {"room": "a"}, {})])
            await _until(lambda: len(a.events) == 1)
            assert [e["id"] for e in a.events] == now
            await _until(lambda: len(a.events) == 2, within=5)
            assert datetime.now(UTC) >= due
            assert [e["id"] for e in a.events] == [*now, later]
            await _until(lambda: len(b.events) == 2)
            assert [e["id"] for e in b.events] == to_b  # the batch, to room b only
            await a.close()
            await b.close()

    asyncio.run(main())


def test_careless_input_gets_typed_errors_and_changes_nothing(live: Live) -> None:
    with live.client() as c:
        bad = c.post(
            "/v1/streams/groups/chat/subscriptions",
            json={"condition": "(SELECT true)", "params": {}},
        )
        assert bad.status_code in (400, 422) and bad.json()["error"]
        assert (
            c.post("/v1/streams/groups/nope/subscriptions", json={"condition": "true"}).status_code
            == 404
        )
        naive = c.post(
            "/v1/streams/events",
            json={"topic": "t", "payload": {}, "delayed_until": "2030-01-01T00:00:00"},
        )
        assert naive.status_code == 422
        unknown = c.post(
            "/v1/streams/events", json={"topic": "t", "payload": {}, "subscription_id": 99999}
        )
        assert unknown.status_code == 404 and unknown.json()["error"] == "not_found"
        assert c.get("/v1/streams/subscriptions/99999/events").status_code == 404
        batch = c.post(
            "/v1/streams/events/batch",
            json={"topic": "t", "events": [{"payload": {}}] * 3, "subscription_id": 99999},
        )
        assert batch.status_code == 404 and batch.json()["error"] == "not_found"
    assert live.value("SELECT count(*) FROM mbus.subscriptions") == 0
    assert live.value("SELECT count(*) FROM mbus.events WHERE topic = 't'") == 0
    reader = live.add_key("reader", ["streams:read:other"])
    assert reader
    sid = _subscribe(live, "a")
    with live.client("reader") as c:
        assert c.get(f"/v1/streams/subscriptions/{sid}/events").status_code == 403
        assert (
            c.post("/v1/streams/groups/chat/subscriptions", json={"condition": "true"}).status_code
            == 403
        )


def test_pgmbus_serve_stops_on_sigterm_with_listeners_connected(db_dsn: str) -> None:
    """A real ``pgmbus serve`` process: SIGTERM ends the open SSE streams (``event: end``)
    and the server exits instead of waiting for them forever."""
    svc = Service(db_dsn, "")
    key = svc.add_key("admin", ADMIN_SCOPES)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        streams.create_group(conn, "chat", start="now")
        sid = streams.subscribe(conn, "chat", "true")
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pgmbus",
            "serve",
            "--dsn",
            db_dsn,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-dispatcher",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: _answers(base + "/healthz"), timeout=30)
        with socket.create_connection(("127.0.0.1", port), timeout=15) as listener:
            listener.sendall(
                f"GET /v1/streams/subscriptions/{sid}/events HTTP/1.1\r\nhost: x\r\n"
                f"authorization: Bearer {key}\r\n\r\n".encode()
            )
            received = b""
            while b": subscription" not in received:
                received += listener.recv(4096)
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            while chunk := listener.recv(4096):
                received += chunk
            assert b"event: end" in received
        proc.wait(15)
        assert time.monotonic() - started < 10
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url).status_code == 200
    except httpx.TransportError:
        return False
