"""``pgmbus bridge``: run the mover of the routes declared in a database."""

from __future__ import annotations

import logging
import signal
import threading
from typing import Annotated

import typer

from pgmbus.cli.common import DsnOption, console, database, reports_errors
from pgmbus.exchange import Bridge, RoutesFailed


@reports_errors
def bridge_cmd(
    dsn: DsnOption = None,
    route: Annotated[
        list[str] | None,
        typer.Option("--route", help="Run only this route (repeatable); default: all routes."),
    ] = None,
    batch: Annotated[int, typer.Option("--batch", min=1, help="Messages per transfer.")] = 500,
    poll: Annotated[
        float, typer.Option("--poll", min=0.01, help="Longest wait for a wake-up when idle (s).")
    ] = 1.0,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", min=0.001, help="Longest a statement on a destination may run (s)."
        ),
    ] = 30.0,
    once: Annotated[
        bool,
        typer.Option(
            "--once",
            help="Move what is ready now on every route, then exit (non-zero if a route failed).",
        ),
    ] = False,
) -> None:
    """Move the messages of this database's routes to the linked databases (exactly once)."""
    # checked first: a bad DSN or a missing schema fails at once, in one line
    target = database(dsn)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    mover = Bridge(target, routes=route, batch=batch, poll=poll, timeout=timeout)
    if once:
        try:
            moved = mover.drain()
        except RoutesFailed as exc:
            # the other routes moved theirs: say so, then name the failed ones (exit 1)
            console.print(f"moved {exc.moved} message(s)")
            raise
        finally:
            mover.close()
        console.print(f"moved {moved} message(s)")
        if mover.stats.buried:
            console.print(f"buried {mover.stats.buried} refused message(s) (see the logs)")
        return
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stats = mover.run(stop)
    console.print(
        f"stopped: {stats.batches} batches, {stats.accepted} accepted, "
        f"{stats.duplicate} duplicate, {stats.looped} looped, {stats.errors} errors"
    )


def register(app: typer.Typer) -> None:
    """Add ``pgmbus bridge`` to the application."""
    app.command("bridge")(bridge_cmd)
