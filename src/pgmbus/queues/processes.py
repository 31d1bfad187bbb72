"""The child processes a worker runs plain ``def`` handlers in when they must be killable.

A thread cannot be stopped: a handler past its time limit keeps its thread (and its slot).
A child process can: past the limit the worker sends it SIGTERM, then SIGKILL after
:data:`KILL_GRACE`, and starts another one for the next job. Children are started by the
``forkserver`` method (``spawn`` where there is none), never forked from the worker, whose
threads and event loop a fork would copy in whatever state they were.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import multiprocessing
import os
import pickle
import signal
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from typing import Any

from pgmbus.errors import HandlerNotImportable
from pgmbus.handlers import HandlerProcessDied

KILL_GRACE = 1.0
"""Seconds a child past its time limit (or at shutdown) has between SIGTERM and SIGKILL."""

_ORPHAN_CHECK = 1.0  # seconds between a child's looks at whether its worker is still there

_Outcome = tuple[bool, BaseException | None, str]  # returned?, its error, its traceback


class RemoteTraceback(Exception):
    """The traceback of a handler's exception in its child process (its ``__cause__``)."""


PRELOAD = ["__main__", "pgmbus.queues"]
"""What the fork server imports once for every child (its default, the main module, and
pgmbus with psycopg): a child forked from it starts with them, in milliseconds, not seconds."""


def context() -> BaseContext:
    """``forkserver`` where the platform has it, else ``spawn``: never a fork of the worker."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)  # read when the server starts (once a process)
    return ctx


class _Child:
    """One child process and the parent's end of its pipe."""

    def __init__(self, ctx: BaseContext, name: str) -> None:
        self.conn, theirs = ctx.Pipe()
        self.process: BaseProcess = ctx.Process(  # type: ignore[attr-defined]
            target=_serve, args=(theirs, os.getpid()), name=f"pgmbus:{name}", daemon=True
        )
        self.process.start()
        theirs.close()

    def stop(self, grace: float) -> None:
        """SIGTERM, SIGKILL after ``grace`` seconds if it is still there, and reap it."""
        if self.process.exitcode is None:
            self.process.terminate()
            self.process.join(grace)
            if self.process.exitcode is None:
                self.process.kill()
                self.process.join()
        self.conn.close()


class HandlerProcesses:
    """Up to ``size`` child processes, started as jobs need them and kept for the next ones.

    The same face as :class:`pgmbus.queues.threads.HandlerThreads`: :meth:`submit` gives a
    future of the call and an event set once the job is over. Cancelling the future (the
    worker's time limit, or its shutdown) kills the child; the event is set once it is gone,
    so a slot is never free while its runaway child still runs. A child that dies by itself
    fails its job with :class:`~pgmbus.handlers.HandlerProcessDied`. Either way a new child,
    the handler imported, takes its place before the job ends. The caller keeps at most
    ``size`` jobs in the pool at once (the worker's slots).
    """

    def __init__(self, size: int, name: str, ctx: BaseContext | None = None) -> None:
        self.size = size
        self.name = name
        self._ctx = ctx or context()
        self._idle: list[_Child] = []
        self._busy: set[_Child] = set()
        self._jobs: set[asyncio.Task[None]] = set()
        self._closed = False
        self._children = 0  # idle, busy or starting: never more than ``size``
        self._freed = asyncio.Event()  # a child became idle, or could not start
        self._fn: Callable[[Any], Any] | None = None

    async def start(self, fn: Callable[[Any], Any]) -> None:
        """Start the first child, ``fn``'s module imported; raise
        :class:`~pgmbus.errors.HandlerNotImportable` when it cannot import ``fn`` by its
        module and name. The others start as jobs need them, one ahead of them."""
        self._fn = fn
        self._children += 1
        try:
            self._idle.append(await self._ready(fn))
        except BaseException:
            self._children -= 1
            raise

    def submit(
        self, fn: Callable[[Any], Any], arg: Any
    ) -> tuple[asyncio.Future[Any], threading.Event]:
        """Run ``fn(arg)`` in a child: a future of its outcome (cancelling it kills the child)
        and an event set once the child is free again or gone."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        returned = threading.Event()
        job = asyncio.create_task(self._run(fn, arg, future, returned))
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)
        return future, returned

    def close(self) -> None:
        """End every child: idle ones at once, busy ones (cut short at shutdown) after a
        SIGTERM and at most :data:`KILL_GRACE` seconds, then SIGKILL; none outlives this."""
        self._closed = True
        for job in self._jobs:
            job.cancel()
        children = self._idle + list(self._busy)
        self._idle, self._busy = [], set()
        for child in children:
            if child.process.exitcode is None:
                child.process.terminate()
        deadline = time.monotonic() + KILL_GRACE
        for child in children:
            child.stop(max(0.0, deadline - time.monotonic()))

    async def _run(
        self,
        fn: Callable[[Any], Any],
        arg: Any,
        future: asyncio.Future[Any],
        returned: threading.Event,
    ) -> None:
        child: _Child | None = None
        try:
            # a child is replaced before its slot is free: this waits only in a race
            try:
                child = await self._take(fn)
            except Exception as exc:  # no child could start: the attempt fails with why
                if not future.done():
                    future.set_exception(exc)
                return
            self._busy.add(child)
            self._ahead()
            if future.done():  # cancelled while the child started
                self._release(child)
                return
            try:
                child.conn.send((fn, arg, True))
            except (pickle.PicklingError, AttributeError, TypeError) as exc:
                self._release(child)  # nothing was sent: the child still waits for a job
                future.set_exception(_not_importable(fn, exc))
                return
            answered = asyncio.ensure_future(self._answer(child))
            await asyncio.wait({answered, future}, return_when=asyncio.FIRST_COMPLETED)
            if future.done():  # cancelled: the time limit, or the worker's shutdown
                answered.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await answered  # its readers removed before the pipe closes
                await asyncio.to_thread(child.stop, KILL_GRACE)
                await self._replace(child, fn)
                return
            ok, error, trace = answered.result()
            if isinstance(error, HandlerProcessDied):
                await self._replace(child, fn)
            else:
                self._release(child)
            if ok:
                future.set_result(None)
            else:
                error = error or RuntimeError("the handler's process told no outcome")
                if trace:
                    error.__cause__ = RemoteTraceback(trace)
                future.set_exception(error)
        finally:
            returned.set()

    async def _ready(self, fn: Callable[[Any], Any]) -> _Child:
        """A new child that has imported ``fn`` (so that no job's time limit pays for it)."""
        try:
            job = pickle.dumps((fn, None, False))
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            raise _not_importable(fn, exc) from None
        child = await asyncio.to_thread(_Child, self._ctx, self.name)
        try:
            child.conn.send_bytes(job)
            ok, error, _ = await self._answer(child)
        except (EOFError, OSError) as exc:
            ok, error = False, exc
        if not ok:
            await asyncio.to_thread(child.stop, KILL_GRACE)
            raise _not_importable(fn, error) from None
        return child

    async def _take(self, fn: Callable[[Any], Any]) -> _Child:
        """An idle child; a new one while the pool is not full, else the next one freed (a
        successor or the one started ahead: the caller's slot says one is coming)."""
        while not self._idle:
            if self._children < self.size:
                self._children += 1
                try:
                    return await self._ready(fn)
                except BaseException:
                    self._children -= 1
                    raise
            self._freed.clear()
            await self._freed.wait()
        return self._idle.pop()

    def _release(self, child: _Child) -> None:
        """``child`` is idle: a job waiting for one takes it."""
        self._busy.discard(child)
        self._idle.append(child)
        self._freed.set()

    def _ahead(self) -> None:
        """Start a child in the background when none is idle and the pool is not full, so
        that the next job does not pay for its start within its time limit."""
        if self._idle or self._children >= self.size or self._fn is None:
            return
        self._children += 1
        task = asyncio.create_task(self._add(self._fn))
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)

    async def _replace(self, gone: _Child, fn: Callable[[Any], Any]) -> None:
        """Start the successor of a child killed or dead."""
        self._busy.discard(gone)
        await self._add(fn)

    async def _add(self, fn: Callable[[Any], Any]) -> None:
        """One more idle child, counted in ``_children`` by the caller (none once the pool
        is closing)."""
        if self._closed:
            self._children -= 1
            return
        try:
            child = await self._ready(fn)
        except asyncio.CancelledError:  # the pool closed
            self._children -= 1
            raise
        except Exception:  # a job waiting for it tries itself; its attempt fails with why
            self._children -= 1
            self._freed.set()
            logging.getLogger(f"pgmbus.handler.{self.name}").exception(
                "cannot start a process for the handler"
            )
            return
        if self._closed:
            child.stop(KILL_GRACE)
            return
        self._release(child)

    async def _answer(self, child: _Child) -> _Outcome:
        """The child's outcome of its job, or :class:`HandlerProcessDied` when it died."""
        loop = asyncio.get_running_loop()
        ready = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        fds = (child.conn.fileno(), child.process.sentinel)
        for fd in fds:
            loop.add_reader(fd, wake)
        try:
            await ready
        finally:
            for fd in fds:
                loop.remove_reader(fd)
        if child.conn.poll():
            with contextlib.suppress(EOFError, OSError):
                outcome: _Outcome = child.conn.recv()
                return outcome
        await asyncio.to_thread(child.stop, KILL_GRACE)  # gone, or going: reaped
        return False, HandlerProcessDied(_death(child.process.exitcode)), ""


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:  # a signal Python has no name for
            name = f"signal {-exitcode}"
        return f"the handler's process was killed by {name}"
    return f"the handler's process exited with code {exitcode}"


def _not_importable(fn: Callable[..., Any], error: BaseException | None) -> HandlerNotImportable:
    name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
    return HandlerNotImportable(
        f"handler {name} cannot run in a child process: {type(error).__name__}: {error} "
        "(a process-pool handler must be a module-level function its module can import)"
    )


# --- in the child --------------------------------------------------------------------------------


def _serve(conn: Connection, worker: int) -> None:
    """The child's loop: a job at a time until the worker closes the pipe. A job is the
    handler, its message and whether to call it (the import check only loads the handler)."""
    # Ctrl-C reaches the whole process group: the worker decides (graceful stop), not its child
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_orphaned, args=(worker,), daemon=True).start()
    while True:
        try:
            job = conn.recv_bytes()
        except EOFError:
            return
        conn.send(_outcome(job))


def _outcome(job: bytes) -> _Outcome:
    try:
        # from the worker that started this child, over their own pipe (what Connection.recv
        # would load too); loading imports the handler's module the first time
        fn, arg, call = pickle.loads(job)  # noqa: S301
        if call and inspect.isawaitable(result := fn(arg)):
            if inspect.iscoroutine(result):
                result.close()  # never awaited: no warning about it
            raise TypeError("a process-pool handler must be a plain def, not a coroutine")
    except BaseException as exc:  # the handler's error: the worker's retry policy decides
        return False, _portable(exc), "".join(traceback.format_exception(exc))
    return True, None, ""


def _orphaned(worker: int) -> None:
    """End the child when its worker is gone (killed: no one would ever stop it)."""
    parent = os.getppid()
    while os.getppid() == parent and _alive(worker):
        time.sleep(_ORPHAN_CHECK)
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it can cross to the worker, else a RuntimeError naming its type and message
    (an exception whose pickle does not load back, its type the retry policy cannot see)."""
    try:
        pickle.loads(pickle.dumps(exc))  # noqa: S301 - its own bytes, just made
    except Exception:
        return RuntimeError(f"{type(exc).__qualname__}: {exc}")
    return exc
