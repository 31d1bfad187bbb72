"""``manage.py pgmbus_worker module:function --queue Q``: a queue worker inside Django."""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

from django.core.management.base import BaseCommand
from django.db import close_old_connections

from pgmbus.contrib.django import database_alias, dsn
from pgmbus.handlers import DEFAULT_CONCURRENCY
from pgmbus.queues import Message
from pgmbus.queues.worker import Handler, WorkerConfig, load_handler, serve


class Command(BaseCommand):  # type: ignore[misc]
    help = "Handle a queue's messages with module:function until SIGTERM/SIGINT."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("handler", help="module:function called with each Message.")
        parser.add_argument("--queue", "-q", required=True)
        parser.add_argument("--consumer", default="default")
        parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
        parser.add_argument("--lease", type=float, default=60.0)
        parser.add_argument("--max-attempts", type=int, default=5)
        parser.add_argument("--backoff", type=float, default=1.0)
        parser.add_argument("--poll", type=float, default=1.0)
        parser.add_argument("--database", default=None, help="Database alias (default: PGMBUS).")

    def handle(self, *args: Any, **options: Any) -> None:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
        func = load_handler(options["handler"])

        def in_django(message: Message) -> None:
            # Sync handlers run in worker threads: drop connections Django would not reuse.
            close_old_connections()
            try:
                func(message)
            finally:
                close_old_connections()

        handler: Handler = func if inspect.iscoroutinefunction(func) else in_django

        config = WorkerConfig(
            queue=options["queue"],
            consumer=options["consumer"],
            concurrency=options["concurrency"],
            lease=options["lease"],
            max_attempts=options["max_attempts"],
            backoff_base=options["backoff"],
            poll_interval=options["poll"],
        )
        alias = database_alias(options["database"])
        self.stdout.write(f"pgmbus worker: {options['handler']} on {config.queue} ({alias})")
        self.stdout.flush()
        stats = asyncio.run(serve(dsn(alias), handler, config))
        self.stdout.write(
            f"pgmbus worker stopped: {stats.done} done, {stats.retried} retried, "
            f"{stats.dead} dead, {stats.lost} lost"
        )
