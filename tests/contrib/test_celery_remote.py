"""Celery's remote control and events over pgmbus:// with a real worker: ``inspect ping``, a
control command that changes what the worker consumes, task events received by another
process's event receiver (what ``celery events`` reads), and Flower's API."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import httpx
import pytest

from pgmbus.queues import Bus
from tests.contrib.celery_helpers import ROOT, Start, effects, wait_for


@pytest.fixture(scope="module")
def remote_worker(start_worker: Start, tasks: ModuleType) -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PGMBUS_CELERY_REMOTE", "1")
        start_worker("remote", "remote")
    name = f"remote@{socket.gethostname()}"

    def answers() -> bool:
        replies = tasks.app.control.ping(destination=[name], timeout=1.0)
        return any(name in reply for reply in replies)

    wait_for(answers, timeout=60)
    return name


def test_inspect_ping_and_active_queues_reach_the_worker(
    tasks: ModuleType, remote_worker: str
) -> None:
    inspect = tasks.app.control.inspect(destination=[remote_worker], timeout=2.0)
    assert inspect.ping() == {remote_worker: {"ok": "pong"}}
    queues = inspect.active_queues()
    assert queues is not None
    assert [q["name"] for q in queues[remote_worker]] == ["remote"]


def test_a_broadcast_reaches_every_worker(
    tasks: ModuleType, remote_worker: str, start_worker: Start
) -> None:
    """Fanout: one ping, answered by each worker bound to the broadcast exchange."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PGMBUS_CELERY_REMOTE", "1")
        start_worker("remote2", "remote2")
    other = f"remote2@{socket.gethostname()}"

    def both() -> bool:
        names = {n for reply in tasks.app.control.ping(timeout=1.5) for n in reply}
        return {remote_worker, other} <= names

    wait_for(both, timeout=60)


def test_add_consumer_makes_the_worker_take_another_queue(
    tasks: ModuleType, remote_worker: str, celery_env: dict[str, str]
) -> None:
    dsn = celery_env["PGMBUS_CELERY_DSN"]
    tasks.stamp.apply_async(("added",), queue="added")
    with Bus(dsn) as bus:
        assert bus.stats("added")[0].depth == 1  # nobody reads it yet
    replies = tasks.app.control.add_consumer(
        "added", destination=[remote_worker], reply=True, timeout=2.0
    )
    assert replies == [{remote_worker: {"ok": "add consumer added"}}]
    wait_for(lambda: bool(effects(dsn, "added")), timeout=30)
    [(worker, info, _at)] = effects(dsn, "added")
    assert (worker, info) == ("remote", {"queue": "added"})


def test_task_events_reach_an_event_receiver(tasks: ModuleType, remote_worker: str) -> None:
    """A receiver in this process (a topic binding the worker's process did not make) gets
    the worker's task events; ``enable_events`` is a control command that answers."""
    app = tasks.app
    seen: list[dict[str, Any]] = []
    ready = threading.Event()
    replies = app.control.enable_events(destination=[remote_worker], reply=True)
    assert replies == [{remote_worker: {"ok": "task events already enabled"}}]
    with app.connection() as conn:
        receiver = app.events.Receiver(
            conn, handlers={"task-succeeded": seen.append, "*": lambda _event: None}
        )
        told = receiver.on_consume_ready

        def on_ready(*args: Any, **kwargs: Any) -> None:
            told(*args, **kwargs)
            ready.set()  # its queue is declared and bound

        receiver.on_consume_ready = on_ready
        thread = threading.Thread(
            target=receiver.capture, kwargs={"limit": None, "wakeup": False}, daemon=True
        )
        thread.start()
        try:
            wait_for(ready.is_set, timeout=30)
            result = tasks.stamp.apply_async(("evented",), queue="remote")
            wait_for(lambda: any(e.get("uuid") == result.id for e in seen), timeout=30)
        finally:
            receiver.should_stop = True
            thread.join(timeout=10)


def test_a_worker_with_remote_control_and_a_full_prefetch_takes_the_next_task_at_an_ack(
    tasks: ModuleType, start_worker: Start, celery_env: dict[str, str]
) -> None:
    """Its mailbox (no acks, no prefetch) does not make the worker wait for posts (the 30 s
    poll) instead of acks while its task prefetch is full."""
    dsn = celery_env["PGMBUS_CELERY_DSN"]
    for _ in range(10):
        tasks.brief.apply_async(("rfull",), queue="rfull")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PGMBUS_CELERY_REMOTE", "1")
        start_worker("rfull", "rfull", poll=30)  # 2 threads, 2 prefetch slots
    wait_for(lambda: len(effects(dsn, "rfull")) == 10, timeout=60)
    done = [at for _w, _i, at in effects(dsn, "rfull")]
    assert (done[-1] - done[0]).total_seconds() < 4.0  # 5 rounds of 0.3 s: 1.2 s


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def flower(celery_env: dict[str, str]) -> Iterator[str]:
    """A real Flower on the test app's broker; yields its base URL."""
    port = _free_port()
    env = {
        **os.environ,
        **celery_env,
        "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
        "FLOWER_UNAUTHENTICATED_API": "true",
    }
    cmd = [sys.executable, "-m", "celery", "-A", "tests.contrib.celery_app", "flower"]
    cmd += [f"--port={port}", "--address=127.0.0.1", "--logging=warning"]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _get(base + "/healthcheck") == "OK", timeout=60)
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _get(url: str) -> str | None:
    try:
        answer = httpx.get(url, timeout=10)
    except httpx.TransportError:
        return None
    return answer.text if answer.status_code == 200 else None


def test_flower_lists_the_worker_and_its_tasks(
    tasks: ModuleType, remote_worker: str, flower: str
) -> None:
    """Flower's API: its workers (asked by broadcast) and its tasks (from the events)."""

    def listed() -> bool:
        text = _get(f"{flower}/api/workers?refresh=1&workername={remote_worker}")
        return text is not None and remote_worker in json.loads(text)

    wait_for(listed, timeout=60)
    result = tasks.add.apply_async((20, 22), queue="remote")

    def succeeded() -> bool:
        text = _get(f"{flower}/api/task/info/{result.id}")
        return text is not None and json.loads(text).get("state") == "SUCCESS"

    wait_for(succeeded, timeout=60)
    info = json.loads(_get(f"{flower}/api/task/info/{result.id}") or "{}")
    assert (info["worker"], info["result"]) == (remote_worker, "42")
