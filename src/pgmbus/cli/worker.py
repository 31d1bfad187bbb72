"""``pgmbus worker``: run the handlers of an app, or one function on one queue."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from pgmbus.cli.common import DsnOption, console, database, reports_errors
from pgmbus.cli.worker_checks import require_worker_objects
from pgmbus.dsn import resolve_dsn
from pgmbus.handlers import DEFAULT_CONCURRENCY, POOLS, Handlers, Pool
from pgmbus.queues.worker import WorkerConfig, load_handler, serve
from pgmbus.workers import configure_logs, dsn_of, load_target, parse_address, run, run_placed

ConsumerOption = Annotated[str, typer.Option("--consumer", "-c", help="Consumer name.")]


@contextmanager
def command_line_dsn(dsn: str | None) -> Iterator[None]:
    """While the command runs, ``$PGMBUS_DSN`` is the ``--dsn`` given (when one is).

    The command line's DSN wins (the DSN rule), also for a module-level ``Bus()`` that resolves
    its DSN when the module is imported: it reads ``$PGMBUS_DSN``.
    """
    if dsn is None:
        yield
        return
    before = os.environ.get("PGMBUS_DSN")
    os.environ["PGMBUS_DSN"] = resolve_dsn(dsn)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PGMBUS_DSN", None)
        else:
            os.environ["PGMBUS_DSN"] = before


@reports_errors
def worker_cmd(
    target: Annotated[
        str,
        typer.Argument(
            help="module:bus (a Bus, AsyncBus or App whose handlers all run), or "
            "module:function called with each Message of --queue."
        ),
    ],
    queue: Annotated[
        str | None,
        typer.Option("--queue", "-q", help="Queue to consume (module:function form only)."),
    ] = None,
    consumer: ConsumerOption = "default",
    concurrency: Annotated[
        int, typer.Option(help="Messages handled at once (module:function).")
    ] = DEFAULT_CONCURRENCY,
    lease: Annotated[float, typer.Option(help="Lease, seconds (module:function).")] = 60.0,
    max_attempts: Annotated[
        int, typer.Option(help="Deliveries before the dmq (module:function).")
    ] = 5,
    backoff: Annotated[
        float, typer.Option(help="First retry delay, s, doubling (module:function).")
    ] = 1.0,
    poll: Annotated[float, typer.Option(help="Idle poll interval, s (module:function).")] = 1.0,
    timeout: Annotated[
        float | None, typer.Option(help="Seconds an attempt may take (module:function).")
    ] = None,
    pool: Annotated[
        str | None,
        typer.Option(
            help="Where plain def handlers run: 'thread', or 'process' (child processes that "
            "a timeout kills; default: thread, or as each handler declares)."
        ),
    ] = None,
    health: Annotated[
        str | None,
        typer.Option(help="HOST:PORT of an HTTP health endpoint (module:bus form): 200 or 503."),
    ] = None,
    grace: Annotated[
        float, typer.Option(help="Seconds the work in hand may take after SIGTERM (module:bus).")
    ] = 30.0,
    log_format: Annotated[
        str, typer.Option(help="Log lines as 'text' or 'json' (one object a line).")
    ] = "text",
    placement_home: Annotated[
        str | None,
        typer.Option(
            help="DSN of the placement map's home (module:bus): run each handler on the "
            "servers the map gives, following its changes (docs/scale-out.md)."
        ),
    ] = None,
    placement_refresh: Annotated[
        float, typer.Option(help="Seconds between two reads of the map (--placement-home).")
    ] = 5.0,
    dsn: DsnOption = None,
) -> None:
    """Run a worker: handle messages until SIGTERM/SIGINT, then finish those in hand and exit."""
    configure_logs(log_format)
    chosen = _pool(pool)
    with command_line_dsn(dsn):
        if queue is None:
            _run_app(target, health, grace, placement_home, placement_refresh, dsn, chosen)
            return
        config = WorkerConfig(
            queue=queue,
            consumer=consumer,
            concurrency=concurrency,
            lease=lease,
            max_attempts=max_attempts,
            backoff_base=backoff,
            poll_interval=poll,
            timeout=_timeout(timeout),
            pool=chosen or "thread",
        )
        _run_function(target, config, dsn)


def _pool(pool: str | None) -> Pool | None:
    for known in POOLS:
        if pool == known:
            return known
    if pool is None:
        return None
    raise typer.BadParameter(
        f"expected one of {', '.join(POOLS)}, not {pool!r}", param_hint="--pool"
    )


def _timeout(timeout: float | None) -> float | None:
    if timeout is not None and timeout <= 0:
        raise typer.BadParameter("must be > 0", param_hint="--timeout")
    return timeout


def _run_app(
    target: str,
    health: str | None,
    grace: float,
    placement_home: str | None,
    placement_refresh: float,
    dsn: str | None,
    pool: Pool | None,
) -> None:
    """The module:bus form: every handler the app declares."""
    app = _load(load_target, target)
    if not isinstance(app, Handlers):
        raise typer.BadParameter(
            f"{target} is not a Bus, AsyncBus or App (give --queue to run a function)",
            param_hint="TARGET",
        )
    try:
        address = None if health is None else parse_address(health)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--health") from None
    if placement_home is not None:
        if pool is not None:
            raise typer.BadParameter(
                "not with --placement-home (declare pool= on the handlers)", param_hint="--pool"
            )
        console.print(f"worker: {target} (placement map)", highlight=False)
        report = run_placed(
            app, home=placement_home, refresh=placement_refresh, grace=grace, health=address
        )
        typer.echo("worker stopped")
        for line in report.lines():
            typer.echo(f"  {line}")
        return
    checked = database(dsn_of(app, dsn))
    require_worker_objects(
        checked,
        [(h.queue, h.consumer) for h in app.queue_handlers],
        [h.group for h in app.stream_handlers],
    )
    console.print(f"worker: {target}", highlight=False)
    report = run(app, dsn=checked, grace=grace, health=address, pool=pool)
    typer.echo("worker stopped")
    for line in report.lines():
        typer.echo(f"  {line}")  # unwrapped: one line per handler


def _run_function(target: str, config: WorkerConfig, dsn: str | None) -> None:
    """The module:function form: one queue and consumer."""
    func = _load(load_handler, target)
    checked = database(dsn)
    require_worker_objects(checked, [(config.queue, config.consumer)])
    console.print(
        f"worker: {target} on {config.queue}/{config.consumer} x{config.concurrency}",
        highlight=False,
    )
    stats = asyncio.run(serve(checked, func, config))
    console.print(
        f"worker stopped: {stats.done} done, {stats.retried} retried, {stats.dead} dead, "
        f"{stats.lost} lost, {stats.unfinished} unfinished, {stats.reconnects} reconnects",
        highlight=False,
    )


def _load(loader: Callable[[str], Any], spec: str) -> Any:
    """Import ``module:attribute``; a bad one is a usage error (exit 2) naming the problem."""
    try:
        return loader(spec)
    except (ImportError, AttributeError, ValueError, TypeError) as exc:
        raise typer.BadParameter(f"cannot load {spec!r}: {exc}", param_hint="TARGET") from None


def register(app: typer.Typer) -> None:
    """Add ``pgmbus worker`` to the application."""
    app.command("worker")(worker_cmd)
