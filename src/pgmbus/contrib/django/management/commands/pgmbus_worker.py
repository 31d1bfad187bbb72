"""``manage.py pgmbus_worker module:function --queue Q [--queue Q2 ...]``: a worker in Django."""

from __future__ import annotations

import argparse
import functools
import importlib
import inspect
import logging
from collections.abc import Callable
from typing import Any

import django
import psycopg
from django.apps import apps
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections

from pgmbus.contrib.django import database_alias, dsn
from pgmbus.errors import NotFound
from pgmbus.handlers import DEFAULT_CONCURRENCY, POOLS
from pgmbus.queues import Message
from pgmbus.queues.worker import Handler, WorkerConfig, load_handler
from pgmbus.workers import App, parse_address, require_objects, run


def _address(text: str) -> tuple[str, int]:
    """``--health``'s HOST:PORT, a usage error (exit 2) when malformed, as in ``pgmbus worker``."""
    try:
        return parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _InChild:
    """A plain ``def`` handler run in a child process (``--pool process``), the connections
    dropped around each call as in a thread. It pickles as the handler's module and name; a
    child sets Django up before it imports the handler (its module may import models)."""

    def __init__(self, func: Handler, name: str) -> None:
        self.func = func
        self.target = (func.__module__, func.__qualname__)
        self.__module__ = func.__module__
        self.__qualname__ = name

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "func"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if not apps.ready:
            django.setup()
        module, qualname = self.target
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
        self.func = found

    def __call__(self, message: Message) -> None:
        close_old_connections()
        try:
            self.func(message)
        finally:
            close_old_connections()


def _in_django(func: Handler, name: str, pool: str = "thread") -> Handler:
    """``func`` under the name ``name`` (its logger, health and report key); a plain ``def``
    drops the connections Django would not reuse around each call (it runs in a worker
    thread)."""
    if inspect.iscoroutinefunction(func):

        async def call_async(message: Message) -> None:
            await func(message)

        wrapper: Callable[[Message], Any] = call_async
    elif pool == "process":
        return _InChild(func, name)
    else:

        def call(message: Message) -> None:
            close_old_connections()
            try:
                func(message)
            finally:
                close_old_connections()

        wrapper = call
    functools.update_wrapper(wrapper, func)
    wrapper.__qualname__ = name
    return wrapper


def _require_queues(url: str, app: App) -> None:
    """Every queue and consumer exists, or one line naming each missing one and its fix (exit
    1, as ``pgmbus worker``): a worker creates none of them."""
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            require_objects(conn, [(h.queue, h.consumer) for h in app.queue_handlers])
        except NotFound as exc:
            raise CommandError(str(exc)) from None


class Command(BaseCommand):  # type: ignore[misc]
    help = (
        "Handle the messages of one or more queues with module:function until SIGTERM/SIGINT, "
        "then finish those in hand (--grace) and exit."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("handler", help="module:function called with each Message.")
        parser.add_argument(
            "--queue",
            "-q",
            required=True,
            action="append",
            help="Queue to consume; repeat it for several (one loop each, same function).",
        )
        parser.add_argument("--consumer", default="default")
        parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
        parser.add_argument("--lease", type=float, default=60.0)
        parser.add_argument("--max-attempts", type=int, default=5)
        parser.add_argument("--backoff", type=float, default=1.0)
        parser.add_argument("--poll", type=float, default=1.0)
        parser.add_argument(
            "--timeout", type=float, default=None, help="Seconds an attempt may take."
        )
        parser.add_argument(
            "--pool",
            choices=POOLS,
            default="thread",
            help="Where a plain def runs: 'thread', or 'process' (child processes that "
            "--timeout kills).",
        )
        parser.add_argument(
            "--health",
            type=_address,
            default=None,
            help="HOST:PORT of an HTTP health endpoint (200 or 503) and its /metrics.",
        )
        parser.add_argument(
            "--grace",
            type=float,
            default=30.0,
            help="Seconds the work in hand may take after SIGTERM.",
        )
        parser.add_argument("--database", default=None, help="Database alias (default: PGMBUS).")

    def handle(self, *args: Any, **options: Any) -> None:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
        func = load_handler(options["handler"])
        queues: list[str] = list(dict.fromkeys(options["queue"]))  # a repeat runs once
        alias = database_alias(options["database"])
        url = dsn(alias)
        app = App(url)
        for queue in queues:
            config = WorkerConfig(
                queue=queue,
                consumer=options["consumer"],
                concurrency=options["concurrency"],
                lease=options["lease"],
                max_attempts=options["max_attempts"],
                backoff_base=options["backoff"],
                poll_interval=options["poll"],
                timeout=options["timeout"],
                pool=options["pool"],
            )
            # one loop per queue: each its own name, so health and the report tell them apart
            name = func.__qualname__ if len(queues) == 1 else f"{func.__qualname__}[{queue}]"
            app.queue_handlers.append(config.spec(_in_django(func, name, options["pool"])))
        _require_queues(url, app)
        self.stdout.write(f"pgmbus worker: {options['handler']} on {', '.join(queues)} ({alias})")
        self.stdout.flush()
        report = run(app, grace=options["grace"], health=options["health"])
        self.stdout.write("pgmbus worker stopped")
        for name, stats in report.queues.items():
            self.stdout.write(f"  {name}: {stats.summary()}")
