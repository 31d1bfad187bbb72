"""``pool="process"``: plain ``def`` handlers in child processes, on a real database.

A handler past its time limit is killed and its message retried then buried; a child that
dies by itself fails its attempt the same way; results ack; the pool bounds concurrency; a
handler a child cannot import is refused by name; SIGTERM drains, then kills and gives back.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgmbus.errors import HandlerNotImportable
from pgmbus.handlers import App
from pgmbus.queues import Bus, Message
from pgmbus.queues.processes import KILL_GRACE, HandlerProcesses
from pgmbus.workers import serve
from pgmbus.workers.metrics import WorkerMetrics
from tests.workers import pool_app

ROOT = Path(__file__).resolve().parents[2]
QUEUES = ("fast", "slow", "exits", "stubborn")


@pytest.fixture
def pooldb(db_dsn: str) -> Iterator[str]:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE ran (queue text, iid text, attempt int, pid int,"
            " started float8, ended float8)"
        )
    with Bus(db_dsn) as bus:
        for q in QUEUES:
            bus.create_queue(q)
    yield db_dsn


def ran(dsn: str, queue: str) -> list[tuple[str, int, int, float, float | None]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT iid, attempt, pid, started, ended FROM ran WHERE queue = %s ORDER BY started",
            (queue,),
        ).fetchall()
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_until(check: Callable[[], Any], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


def run_until(
    dsn: str, app: App, done: Callable[[], bool], metrics: WorkerMetrics | None = None
) -> None:
    """Serve ``app`` in-process until ``done()`` holds, then stop it gracefully."""

    async def main() -> None:
        stop = asyncio.Event()
        worker = asyncio.create_task(
            serve(app, dsn=dsn, stop=stop, signals=False, grace=5, metrics=metrics)
        )
        try:
            await asyncio.to_thread(wait_until, lambda: done() or worker.done())
        finally:
            stop.set()
            await worker

    asyncio.run(main())


def only(*names: str) -> App:
    """The pool app's handlers of these queues alone."""
    app = App()
    app.queue_handlers.extend(h for h in pool_app.app.queue_handlers if h.queue in names)
    return app


def test_a_handler_past_its_limit_is_killed_retried_then_buried(pooldb: str) -> None:
    metrics = WorkerMetrics()
    with Bus(pooldb) as bus:
        iid = bus.post("slow", {"dsn": pooldb})
        run_until(pooldb, only("slow"), lambda: len(bus.dmq()) == 1, metrics)
        (dead,) = bus.dmq()
    assert dead.iid == iid and dead.attempts == 2
    assert dead.reason == "HandlerTimeout: handler exceeded 0.5s"
    attempts = ran(pooldb, "slow")
    assert [(a[1], a[4]) for a in attempts] == [(1, None), (2, None)]  # never finished
    assert attempts[0][2] != attempts[1][2]  # the killed child was replaced
    assert not any(alive(a[2]) for a in attempts)  # SIGTERM ignored: SIGKILLed
    # the runaway child (60s asleep, deaf to SIGTERM) did not keep the only slot
    assert attempts[1][3] - attempts[0][3] < 15
    labels = {"engine": "queues", "handler": "tests.workers.pool_app.slow", "queue": "slow"}
    assert (
        metrics.registry.get_sample_value("pgmbus_worker_killed_total", labels | {"group": ""}) == 2
    )


def test_a_child_that_dies_fails_its_attempt(pooldb: str) -> None:
    with Bus(pooldb) as bus:
        iid = bus.post("exits", {"dsn": pooldb})
        run_until(pooldb, only("exits"), lambda: len(bus.dmq()) == 1)
        (dead,) = bus.dmq()
        assert all(s.depth == 0 for s in bus.stats())
    assert dead.iid == iid and dead.attempts == 2
    assert dead.reason == "HandlerProcessDied: the handler's process exited with code 3"
    assert [a[1] for a in ran(pooldb, "exits")] == [1, 2]


def test_results_ack_and_the_pool_bounds_concurrency(pooldb: str) -> None:
    with Bus(pooldb) as bus:
        iids = bus.post_batch("fast", [{"dsn": pooldb, "sleep": 1.0} for _ in range(5)])
        run_until(pooldb, only("fast"), lambda: len(ran(pooldb, "fast")) == 5)
        assert all(s.depth == 0 for s in bus.stats()) and not bus.dmq()
    runs = ran(pooldb, "fast")
    assert sorted(r[0] for r in runs) == sorted(iids)
    assert {r[1] for r in runs} == {1}  # acked: none delivered again
    assert len({r[2] for r in runs}) == 2  # concurrency=2: two children, reused
    # at most two at once (and two at some point)
    starts = [r[3] for r in runs]
    overlap = max(sum(1 for r in runs if r[3] <= t < (r[4] or t)) for t in starts)
    assert overlap == 2


def test_a_handler_a_child_cannot_import_is_refused_by_name(pooldb: str) -> None:
    app = App()

    @app.handler("fast", pool="process")
    def local(message: Message) -> None:  # not reachable by its module and name
        pass

    with Bus(pooldb) as bus:
        bus.post("fast", {"dsn": pooldb})

        async def main() -> None:
            await serve(app, dsn=pooldb, signals=False, grace=1)

        with pytest.raises(HandlerNotImportable, match=r"handler .*<locals>\.local cannot run"):
            asyncio.run(main())
        assert [s.depth for s in bus.stats() if s.qname == "fast"] == [1]  # untouched
    with pytest.raises(ValueError, match="pool='process' is for plain def"):

        @app.handler("fast", pool="process")
        async def coroutine(message: Message) -> None:
            pass


def test_a_stop_past_the_grace_kills_the_child_and_gives_its_message_back(pooldb: str) -> None:
    """In-process (the fast variant of the SIGTERM test below): the child ignores SIGTERM,
    the grace period ends, it is SIGKILLed and its message is back in the queue."""
    with Bus(pooldb) as bus:
        stuck = bus.post("stubborn", {"dsn": pooldb})

        async def main() -> None:
            stop = asyncio.Event()
            app = only("stubborn")
            worker = asyncio.create_task(
                serve(app, dsn=pooldb, stop=stop, signals=False, grace=0.5)
            )
            await asyncio.to_thread(wait_until, lambda: ran(pooldb, "stubborn") or worker.done())
            stop.set()
            await worker

        asyncio.run(main())
        assert not bus.dmq()
        assert {s.qname: s.depth for s in bus.stats()}["stubborn"] == 1
    ((iid, attempt, pid, _, ended),) = ran(pooldb, "stubborn")
    assert (iid, attempt, ended) == (stuck, 1, None)
    assert not alive(pid)


@pytest.mark.slow
def test_sigterm_drains_then_kills_and_gives_back(pooldb: str) -> None:
    """Within --grace the short job finishes (acked); then the stubborn child, which ignores
    SIGTERM, is SIGKILLed and its message given back: not lost, not buried. Its lease was kept
    extended while it ran (lease 1s, no second delivery)."""
    env = os.environ | {"PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "PGMBUS_DSN": pooldb}
    with Bus(pooldb) as bus:
        stuck = bus.post("stubborn", {"dsn": pooldb})
        proc = subprocess.Popen(
            [sys.executable, "-m", "pgmbus", "worker", "tests.workers.pool_app:app", "--grace=2"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_until(lambda: ran(pooldb, "stubborn"))
            short = bus.post("fast", {"dsn": pooldb, "sleep": 1.0})
            wait_until(lambda: any(r[0] == short for r in ran(pooldb, "fast")))
            time.sleep(1.0)  # the stubborn one outlives its 1s lease
            stopped = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
            took = time.monotonic() - stopped
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 0, out + err
        assert took < 2 + KILL_GRACE + 3, took
        ((iid, attempt, pid, _, ended),) = ran(pooldb, "stubborn")
        assert (iid, attempt, ended) == (stuck, 1, None) and not alive(pid)
        assert [r[4] is not None for r in ran(pooldb, "fast")] == [True]  # drained, acked
        assert not bus.dmq()
        depth = {s.qname: s.depth for s in bus.stats()}
        assert depth["stubborn"] == 1 and depth["fast"] == 0  # given back
    assert "given back at shutdown" in err


@pytest.mark.slow
def test_the_one_function_form_takes_pool_and_timeout(pooldb: str) -> None:
    """``pgmbus worker module:function -q Q --pool process --timeout S``."""
    env = os.environ | {"PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "PGMBUS_DSN": pooldb}
    with Bus(pooldb) as bus:
        late = bus.post("slow", {"dsn": pooldb, "sleep": 30})
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "pgmbus", "worker", "tests.workers.pool_app:slow"),
                *("-q", "slow", "--pool", "process", "--timeout", "0.5", "--max-attempts", "1"),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_until(lambda: len(bus.dmq()) == 1 or proc.poll() is not None)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 0, out + err
        (dead,) = bus.dmq()
    assert dead.iid == late and dead.reason == "HandlerTimeout: handler exceeded 0.5s"
    ((_, _, pid, _, _),) = ran(pooldb, "slow")
    assert not alive(pid)


@pytest.mark.slow
def test_a_child_does_not_outlive_a_killed_worker(pooldb: str) -> None:
    """SIGKILL leaves the worker no time to stop its children: they end by themselves."""
    env = os.environ | {"PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "PGMBUS_DSN": pooldb}
    with Bus(pooldb) as bus:
        bus.post("stubborn", {"dsn": pooldb})
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgmbus", "worker", "tests.workers.pool_app:app"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: ran(pooldb, "stubborn"))
    finally:
        proc.kill()
        proc.wait()
    ((_, _, pid, _, _),) = ran(pooldb, "stubborn")
    wait_until(lambda: not alive(pid), seconds=10)


def test_a_handler_whose_module_fails_in_a_child_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pickling checks the name only: the first child's import of the module is the check."""
    (tmp_path / "parent_only.py").write_text(
        "import multiprocessing\n"
        "if multiprocessing.parent_process() is not None:\n"
        "    raise ImportError('this module refuses child processes')\n"
        "def handle(message):\n"
        "    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import parent_only  # type: ignore[import-not-found]

    async def main() -> None:
        pool = HandlerProcesses(2, "parent_only.handle")
        try:
            await pool.start(parent_only.handle)
        finally:
            pool.close()

    with pytest.raises(HandlerNotImportable) as caught:
        asyncio.run(main())
    assert str(caught.value).startswith(
        "handler parent_only.handle cannot run in a child process: "
        "ImportError: this module refuses child processes"
    )


def test_a_job_fails_when_no_child_can_start_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first child imports the module; later ones cannot: the second job's attempt fails
    with the import's error (it neither waits forever nor takes the first job's child)."""
    marker = tmp_path / "imported-once"
    (tmp_path / "once_only.py").write_text(
        "import multiprocessing, pathlib, time\n"
        f"MARKER = pathlib.Path({str(marker)!r})\n"
        "if multiprocessing.parent_process() is not None:\n"
        "    if MARKER.exists():\n"
        "        raise ImportError('imported once already')\n"
        "    MARKER.touch()\n"
        "def handle(seconds):\n"
        "    time.sleep(seconds)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import once_only  # type: ignore[import-not-found]

    async def main() -> None:
        pool = HandlerProcesses(2, "once_only.handle")
        try:
            await pool.start(once_only.handle)
            first, _ = pool.submit(once_only.handle, 1.0)
            second, _ = pool.submit(once_only.handle, 0)
            with pytest.raises(HandlerNotImportable, match="imported once already"):
                await asyncio.wait_for(second, 30)
            assert await asyncio.wait_for(first, 30) is None
        finally:
            pool.close()

    asyncio.run(main())
