"""Keep a dispatcher running inside a service: restart it, logged, after it fails."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from pgmbus.reconnect import Backoff
from pgmbus.timers.dispatcher import Dispatcher

log = logging.getLogger("pgmbus.timers")


async def keep_dispatching(make: Callable[[], Dispatcher], stop: asyncio.Event) -> None:
    """Run ``make()``'s dispatcher until ``stop``; when it raises, log the error and run a new
    one after a backoff (capped at 30 s), so that a service's dispatcher never ends silently.

    Parameters
    ----------
    make:
        Builds the dispatcher (called again for each restart).
    stop:
        Set to stop: the running dispatcher finishes its claimed deliveries and returns.
    """
    backoff = Backoff(base=0.5, cap=30.0)
    while not stop.is_set():
        try:
            await make().run(stop)
            return
        except Exception:
            delay = backoff.next()
            log.exception("the dispatcher failed; a new one starts in %.1fs", delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
