"""One tenant's failure never holds back another; what a client makes the server hold is bounded.

Real processes only: ``pgmbus bridge`` with one destination server stopped, a Celery worker
started on a queue holding a message that is no Kombu envelope, ``pgmbus serve`` with SSE
clients that stop reading.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql

from pgmbus import schema, streams
from pgmbus.devdb import DevCluster
from pgmbus.exchange import Bridge
from pgmbus.queues import Bus

Conn = psycopg.Connection[Any]


# --- bridge routes ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def second_server() -> Iterator[DevCluster]:
    """A second server for the module (one initdb), stopped between tests."""
    home = Path(tempfile.mkdtemp(prefix="pgmbus-isolation-"))
    home.chmod(0o755)
    cluster = DevCluster(home, ephemeral=True)
    try:
        yield cluster
    finally:
        cluster.destroy()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def down_server(second_server: DevCluster) -> DevCluster:
    """The second server with a fresh pgmbus database ``far`` (queue ``jobs``), stopped."""
    second_server.start()
    with psycopg.connect(second_server.dsn("postgres"), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(_far())))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(_far())))
    with psycopg.connect(second_server.dsn(_far()), autocommit=True) as far:
        schema.install(far)
        far.execute("SELECT mbus.create_queue('jobs', 1)")
    second_server.stop()
    return second_server


def _far() -> str:
    return f"far_{os.getpid()}"  # database names are unique across an exchange


def _count(conn: Conn, table: str) -> int:
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier("mbus", table)))
    got = row.fetchone()
    return int(got[0]) if got else 0


def _pending(conn: Conn, route: str) -> int:
    with conn.transaction(force_rollback=True):
        row = conn.execute("SELECT jsonb_array_length(mbus.exchange_take(%s, 100000))", (route,))
        got = row.fetchone()
    return int(got[0]) if got else 0


def _wait(what: str, check: Callable[[], bool], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _routes(src: Conn, near_dsn: str, far_dsn: str) -> None:
    """Two routes from ``jobs``: ``a_down`` (sorted first) to the stopped server, ``b_up``."""
    src.execute("SELECT mbus.create_queue('jobs', 1)")
    src.execute("SELECT mbus.create_link('far', %s)", (far_dsn,))
    src.execute("SELECT mbus.create_link('near', %s)", (near_dsn,))
    src.execute("SELECT mbus.create_route('a_down', 'far', 'jobs', 'jobs')")
    src.execute("SELECT mbus.create_route('b_up', 'near', 'jobs', 'jobs')")


def _post(src: Conn, first: int, last: int) -> None:
    src.execute(
        "SELECT mbus.post('jobs', jsonb_build_object('n', n)) "
        "FROM generate_series(%s::int, %s::int) n",
        (first, last),
    )


def _numbers(conn: Conn) -> list[int]:
    rows = conn.execute("SELECT data FROM mbus.consumen('jobs', 'default', 100000)").fetchall()
    return sorted(int(r[0]["n"]) for r in rows)


def test_a_route_to_a_stopped_server_does_not_hold_back_the_others(
    make_db: Callable[..., str], down_server: DevCluster, tmp_path: Path
) -> None:
    src_dsn, near_dsn = make_db(), make_db()
    log = tmp_path / "bridge.log"
    with (
        psycopg.connect(src_dsn, autocommit=True) as src,
        psycopg.connect(near_dsn, autocommit=True) as near,
    ):
        near.execute("SELECT mbus.create_queue('jobs', 1)")
        _routes(src, near_dsn, down_server.dsn(_far()))
        _post(src, 1, 5)
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "pgmbus", "bridge", "--dsn", src_dsn, "--poll", "0.05"],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            _wait("b_up moved nothing", lambda: _count(near, "q_jobs") == 5)
            _post(src, 6, 10)  # while a_down keeps failing, b_up keeps moving
            _wait("b_up stopped moving", lambda: _count(near, "q_jobs") == 10)
            _wait("no log line names a_down", lambda: b"route a_down" in log.read_bytes())
            assert b"route b_up" not in log.read_bytes()
            assert _pending(src, "a_down") == 10  # held in the source, not lost
            port = down_server.port
            down_server.start()
            if down_server.port != port:  # the server moved: tell the link
                src.execute("SELECT mbus.alter_link('far', %s)", (down_server.dsn(_far()),))
            with psycopg.connect(down_server.dsn(_far()), autocommit=True) as far:
                # a route's own backoff is at most 5 s: it comes back by itself
                _wait("a_down never resumed", lambda: _count(far, "q_jobs") == 10, 30.0)
                assert _numbers(far) == list(range(1, 11))
        finally:
            proc.terminate()
            proc.wait(20)
        assert _numbers(near) == list(range(1, 11))
        assert _pending(src, "a_down") == _pending(src, "b_up") == 0


def test_bridge_once_moves_every_route_it_can_and_names_the_failed_ones(
    make_db: Callable[..., str], down_server: DevCluster
) -> None:
    src_dsn, near_dsn = make_db(), make_db()
    with (
        psycopg.connect(src_dsn, autocommit=True) as src,
        psycopg.connect(near_dsn, autocommit=True) as near,
    ):
        near.execute("SELECT mbus.create_queue('jobs', 1)")
        _routes(src, near_dsn, down_server.dsn(_far()))
        _post(src, 1, 7)
        proc = subprocess.run(
            [sys.executable, "-m", "pgmbus", "bridge", "--dsn", src_dsn, "--once", "--batch", "3"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode != 0, proc.stdout
        assert "moved 7 message(s)" in proc.stdout
        assert "a_down" in proc.stderr and "b_up" not in proc.stderr
        assert _numbers(near) == list(range(1, 8))
        assert _pending(src, "a_down") == 7


# --- Celery ---------------------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def celery_app(make_db: Callable[..., str], tmp_path: Path) -> Iterator[tuple[Any, dict[str, str]]]:
    """The Celery test app (tests/contrib/celery_app.py) on a fresh database."""
    env = {"PGMBUS_CELERY_DSN": make_db(), "PGMBUS_CELERY_RESULTS": str(tmp_path)}
    with psycopg.connect(env["PGMBUS_CELERY_DSN"], autocommit=True) as conn:
        conn.execute(  # where the test app's tasks record what they did
            "CREATE TABLE celery_effects (key text, worker text, info jsonb,"
            " at timestamptz DEFAULT clock_timestamp())"
        )
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    sys.modules.pop("tests.contrib.celery_app", None)
    try:
        yield importlib.import_module("tests.contrib.celery_app"), env
    finally:
        sys.modules.pop("tests.contrib.celery_app", None)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _celery_worker(
    env: dict[str, str], name: str, *, lease: float, **more: str
) -> subprocess.Popen[bytes]:
    """A real Celery worker of the test app on queue ``celery`` (threads pool)."""
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "tests.contrib.celery_app", "worker",
         "--pool", "threads", "-c", "2", "-Q", "celery", "-n", f"{name}@%h",
         "--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        env={**os.environ, **env, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
             "PGMBUS_CELERY_LEASE": str(lease), "PGMBUS_CELERY_POLL": "0.2", **more},
        cwd=ROOT,
        start_new_session=True,
    )  # fmt: skip


def _stop_worker(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _envelope(body: str, **more: Any) -> dict[str, Any]:
    return {
        "body": body,
        "content-type": "application/json",
        "content-encoding": "utf-8",
        "headers": {},
        "properties": {"delivery_tag": "t-1", "body_encoding": "base64", "delivery_info": {}},
        **more,
    }


def test_a_celery_worker_buries_messages_that_are_no_kombu_envelope_and_runs_the_rest(
    celery_app: tuple[Any, dict[str, str]],
) -> None:
    tasks, env = celery_app
    dsn = env["PGMBUS_CELERY_DSN"]
    bad: dict[str, dict[str, Any]] = {
        "a Bus.post": {"order": 1},
        "no delivery tag": {"body": "e30=", "properties": {}},
        "properties not an object": {"body": "e30=", "properties": "tag"},
        "bad base64": _envelope("!!! not base64 !!!"),
        "not JSON": _envelope(base64.b64encode(b"{not json").decode()),
    }
    with Bus(dsn) as bus:
        bus.create_queue("celery")
        for data in bad.values():
            bus.post("celery", data)
    proc = _celery_worker(env, "isolation", lease=1)
    try:
        assert tasks.add.delay(2, 3).get(timeout=40) == 5
        # a compressed body is not JSON until Kombu inflates it: not buried
        assert tasks.add.apply_async((3, 4), compression="gzip").get(timeout=40) == 7
        with Bus(dsn) as bus:
            _wait("bad messages not buried", lambda: len(bus.dmq("celery")) == 5)
            dead = bus.dmq("celery")
            time.sleep(1.5)  # one lease later: nothing comes back, the worker still runs
            assert tasks.add.delay(1, 1).get(timeout=40) == 2
            assert proc.poll() is None
            assert len(bus.dmq("celery")) == 5
            assert all(s.depth == 0 for s in bus.stats("celery"))
        reasons = sorted(d.reason for d in dead)
        assert all("Kombu message" in r for r in reasons), reasons
        assert any("delivery_tag" in r for r in reasons)
        assert any("base64" in r for r in reasons)
        assert any("JSON its content-type" in r for r in reasons)
        assert any("no 'properties' object" in r for r in reasons)
        # buried as they were posted
        assert sorted(json.dumps(d.data, sort_keys=True) for d in dead) == sorted(
            json.dumps(v, sort_keys=True) for v in bad.values()
        )
    finally:
        _stop_worker(proc)


def test_a_task_that_kills_its_worker_goes_to_the_dmq_after_max_attempts(
    celery_app: tuple[Any, dict[str, str]],
) -> None:
    tasks, env = celery_app
    dsn = env["PGMBUS_CELERY_DSN"]
    tasks.kill_worker.delay("poison")
    killed = 0
    with Bus(dsn) as bus:
        for start in range(4):  # a supervisor starting a worker again after each death
            proc = _celery_worker(env, f"poison{start}", lease=1, PGMBUS_CELERY_MAX_ATTEMPTS="2")
            _wait("the worker neither died nor buried", lambda: (
                proc.poll() is not None or bool(bus.dmq("celery"))  # noqa: B023
            ), 40)  # fmt: skip
            if proc.poll() is None:
                break  # this one lives: the poison message is gone
            killed += 1  # the poison task killed it
    try:
        assert killed == 2, f"{killed} workers killed"
        assert tasks.add.delay(2, 3).get(timeout=40) == 5
        assert proc.poll() is None
        with Bus(dsn) as bus:
            [dead] = bus.dmq("celery")
            assert all(s.depth == 0 for s in bus.stats("celery"))
        # its deliveries died with their workers: buried as never reported, not as failed
        assert dead.reason.startswith("max_attempts (2) reached: the last of 2 deliveries never")
        assert dead.unreported
        assert dead.data["headers"]["task"] == "tests.contrib.celery_app.kill_worker"
        with psycopg.connect(dsn) as conn:
            runs = conn.execute("SELECT count(*) FROM celery_effects WHERE key = 'poison'")
            assert runs.fetchone() == (2,)
    finally:
        _stop_worker(proc)


# --- SSE listeners --------------------------------------------------------------------------------
def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _metric(base: str, name: str) -> float | None:
    for line in httpx.get(base + "/metrics", timeout=15).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def _stalled(port: int, key: str, sid: int) -> socket.socket:
    """A client that opens the event stream and never reads (a small receive buffer)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(
        f"GET /v1/streams/subscriptions/{sid}/events HTTP/1.1\r\nhost: x\r\n"
        f"authorization: Bearer {key}\r\n\r\n".encode()
    )
    return sock


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_stalled_sse_listeners_are_bounded_by_bytes_and_counted_per_key(
    make_db: Callable[..., str],
) -> None:
    dsn = make_db()
    stalled_count, per_key, events, pad = 12, 13, 300, "x" * 16_000
    with psycopg.connect(dsn, autocommit=True) as conn:
        [(api_key,)] = conn.execute("SELECT api_key FROM mbus.timer_add_client('sse')").fetchall()
        key = str(api_key)
        conn.execute("SELECT mbus.api_set_scopes('sse', %s)", (["streams:write:*"],))
        streams.create_group(conn, "chat", start="now")
        # one subscription each: no two listeners share a frame
        sids = [streams.subscribe(conn, "chat", "true", {"i": i}) for i in range(per_key + 1)]
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgmbus", "serve", "--dsn", dsn, "--port", str(port),
         "--no-dispatcher", "--max-listener-bytes", str(1 << 20),
         "--max-listeners-per-key", str(per_key)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    socks: list[socket.socket] = []
    try:
        _wait("pgmbus serve did not answer", lambda: _answers(base + "/healthz"), 30)
        seen: list[str] = []
        marker = threading.Event()
        reader = threading.Thread(
            target=_read_events, args=(base, key, sids[0], seen, marker), daemon=True
        )
        reader.start()
        socks = [_stalled(port, key, sid) for sid in sids[1 : stalled_count + 1]]
        _wait("listeners not connected", lambda: _metric(base, "pgmbus_sse_listeners") == 13)
        before = _rss_mib(proc.pid)
        with psycopg.connect(dsn) as conn:
            for first in range(0, events, 20):  # bursts well under a listener's bound
                for n in range(first, first + 20):
                    streams.publish(conn, "chat", {"n": n, "pad": pad})
                conn.commit()
                _wait("the reader fell behind", lambda: len(seen) >= first + 20)  # noqa: B023
            streams.publish(conn, "chat", {"n": "last"})
            conn.commit()
        # the reader gets every event: the stalled ones did not hold it back
        assert marker.wait(60), f"the reading listener got {seen[-3:]}"
        assert seen == [*map(str, range(events)), "last"]
        grown = _rss_mib(proc.pid) - before
        # 12 stalled listeners x 4.8 MB of frames each, had they been kept; 12 x 1 MiB at most now
        assert grown < 40, f"pgmbus serve grew by {grown:.0f} MiB"
        # the reader has closed its stream; each stalled one was dropped, none is waited for
        _wait("stalled listeners not dropped", lambda: _metric(base, "pgmbus_sse_listeners") == 0)
        assert _metric(base, "pgmbus_sse_listeners_dropped_total") == stalled_count
        queued = _metric(base, "pgmbus_sse_queued_bytes")
        assert queued == 0  # what the dropped ones had queued was freed
        # per key: 13 listener connections at most. The 12 dropped ones are still open (their
        # clients read nothing, their sends are blocked): they count until they close
        socks.append(_stalled(port, key, sids[0]))
        _wait("the 13th listener not connected", lambda: _metric(base, "pgmbus_sse_listeners") == 1)
        assert _metric(base, "pgmbus_sse_connections") == per_key
        with httpx.stream(
            "GET",
            f"{base}/v1/streams/subscriptions/{sids[-1]}/events",
            headers={"authorization": f"Bearer {key}"},
            timeout=15,
        ) as over:
            assert over.status_code == 429  # (a 200 would stream: not read then)
            body = json.loads(over.read())
        assert body["error"] == "too_many_requests"
        assert "max_listeners_per_key" in body["message"]
        assert _metric(base, "pgmbus_sse_listeners_refused_total") == 1
        # closed connections count no more: 13 new ones are taken
        for sock in socks:
            sock.close()
        _wait(
            "closed listeners still counted", lambda: _metric(base, "pgmbus_sse_connections") == 0
        )
        socks = [_stalled(port, key, sids[i]) for i in range(per_key)]
        _wait("listeners refused", lambda: _metric(base, "pgmbus_sse_listeners") == per_key)
        assert _metric(base, "pgmbus_sse_listeners_refused_total") == 1
    finally:
        for sock in socks:
            sock.close()
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def _read_events(base: str, key: str, sid: int, seen: list[str], marker: threading.Event) -> None:
    """A listener that reads: collects the ``n`` of each event until the last one."""
    headers = {"authorization": f"Bearer {key}"}
    timeout = httpx.Timeout(15, read=None)
    with httpx.stream(
        "GET", f"{base}/v1/streams/subscriptions/{sid}/events", headers=headers, timeout=timeout
    ) as response:
        for line in response.iter_lines():
            if line.startswith("event: "):
                seen.append(line)  # overflow or end: the test fails on it
                return
            if line.startswith("data: "):
                n = json.loads(line[6:])["payload"]["n"]
                seen.append(str(n))
                if n == "last":
                    marker.set()
                    return


def test_a_message_the_destination_keeps_refusing_goes_to_the_dmq_and_the_route_goes_on(
    make_db: Callable[..., str],
) -> None:
    src_dsn, dst_dsn = make_db(), make_db()
    with (
        psycopg.connect(src_dsn, autocommit=True) as src,
        psycopg.connect(dst_dsn, autocommit=True) as dst,
    ):
        dst.execute("SELECT mbus.create_queue('jobs', 1)")
        # the destination refuses one message for its data (a rule of its own, 23514)
        dst.execute("ALTER TABLE mbus.q_jobs ADD CONSTRAINT no_three CHECK (data->>'n' <> '3')")
        src.execute("SELECT mbus.create_queue('jobs', 1)")
        src.execute("SELECT mbus.create_link('dst', %s)", (dst_dsn,))
        src.execute("SELECT mbus.create_route('jobs_to_dst', 'dst', 'jobs', 'jobs')")
        _post(src, 1, 6)
        mover = Bridge(src_dsn, batch=4, poll=0.05)
        stop = threading.Event()
        thread = threading.Thread(target=mover.run, args=(stop,))
        thread.start()
        try:
            _wait("the route stayed stuck", lambda: _count(dst, "q_jobs") == 5)
            _post(src, 7, 8)  # the route is moving again
            _wait("the route did not go on", lambda: _count(dst, "q_jobs") == 7)
        finally:
            stop.set()
            thread.join(30)
        assert not thread.is_alive()
        assert _numbers(dst) == [1, 2, 4, 5, 6, 7, 8]  # in order, the refused one left out
        with Bus(src_dsn) as bus:
            [dead] = bus.dmq("jobs")
        assert dead.data == {"n": 3} and dead.cname == "xr_jobs_to_dst"
        assert "route jobs_to_dst" in dead.reason and "no_three" in dead.reason
        assert dead.attempts == 3
        assert mover.stats.buried == 1 and mover.stats.accepted == 7
        assert _pending(src, "jobs_to_dst") == 0


def test_a_destination_stuck_behind_a_lock_holds_only_its_own_route(
    make_db: Callable[..., str], tmp_path: Path
) -> None:
    src_dsn, stuck_dsn, near_dsn = make_db(), make_db(), make_db()
    log = tmp_path / "bridge.log"
    with (
        psycopg.connect(src_dsn, autocommit=True) as src,
        psycopg.connect(stuck_dsn, autocommit=True) as stuck,
        psycopg.connect(near_dsn, autocommit=True) as near,
        psycopg.connect(stuck_dsn) as locker,
    ):
        for conn in (stuck, near):
            conn.execute("SELECT mbus.create_queue('jobs', 1)")
        src.execute("SELECT mbus.create_queue('jobs', 1)")
        src.execute("SELECT mbus.create_link('stuck', %s)", (stuck_dsn,))
        src.execute("SELECT mbus.create_link('near', %s)", (near_dsn,))
        src.execute("SELECT mbus.create_route('a_stuck', 'stuck', 'jobs', 'jobs')")
        src.execute("SELECT mbus.create_route('b_up', 'near', 'jobs', 'jobs')")
        # every receive on that destination now waits for this transaction
        locker.execute("LOCK TABLE mbus.exchange_received IN ACCESS EXCLUSIVE MODE")
        _post(src, 1, 5)
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "pgmbus", "bridge", "--dsn", src_dsn, "--poll", "0.05",
                 "--timeout", "1"],
                stdout=out,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            _wait("b_up waited for a_stuck", lambda: _count(near, "q_jobs") == 5)
            _wait("no log line names a_stuck", lambda: b"route a_stuck" in log.read_bytes())
            assert b"statement timeout" in log.read_bytes()
            # held in the source, not lost (between two tries: a try holds them meanwhile)
            _wait("a_stuck's batch not in the source", lambda: _pending(src, "a_stuck") == 5)
            assert _count(stuck, "q_jobs") == 0
            locker.rollback()  # the destination is free again: the route catches up
            _wait("a_stuck never resumed", lambda: _count(stuck, "q_jobs") == 5, 30.0)
        finally:
            proc.terminate()
            proc.wait(20)
        assert _numbers(stuck) == _numbers(near) == [1, 2, 3, 4, 5]
