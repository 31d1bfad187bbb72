"""``pgmbus serve``, ``pgmbus dispatcher`` and ``pgmbus timers ...`` (the CallMeBack service)."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Annotated, Any

import psycopg
import typer

from pgmbus.cli.common import DsnOption, JsonOption, print_json, reports_errors
from pgmbus.dsn import resolve_dsn
from pgmbus.errors import ConfigurationError, translating
from pgmbus.timers import store

if TYPE_CHECKING:  # the dispatcher and the service need the ``server`` extra (httpx, ...)
    from pgmbus.timers.dispatcher import Dispatcher, DispatcherConfig
    from pgmbus.timers.netguard import NetworkGuard

SERVER_EXTRA_HINT = "this command needs the server extra: pip install 'pgmbus[server]'"


def _require_server_extra() -> None:
    """Raise ``ConfigurationError`` naming the extra when its packages are missing."""
    try:
        import croniter  # type: ignore[import-untyped]  # noqa: F401
        import httpx  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError(f"{SERVER_EXTRA_HINT} ({exc.name} is missing)") from exc

app = typer.Typer(help="Scheduled HTTP callbacks: clients and maintenance.", no_args_is_help=True)

AllowOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-network",
        help="CIDR that callbacks may call although it is not public (repeatable); "
        "also $PGMBUS_ALLOW_NETWORKS (comma-separated).",
    ),
]
ConcurrencyOption = Annotated[
    int, typer.Option("--concurrency", min=1, help="HTTP calls in flight at most.")
]
TimeoutOption = Annotated[float, typer.Option("--timeout", min=0.01, help="Seconds per HTTP call.")]
LeaseOption = Annotated[
    float,
    typer.Option("--bucket-lease", min=0.5, help="Seconds a bucket lease lasts without renewal."),
]
SlackOption = Annotated[
    float,
    typer.Option("--claim-slack", min=0.1, help="Seconds a claim outlasts the HTTP timeout."),
]


def _guard(allow: list[str] | None) -> NetworkGuard:
    from pgmbus.timers.netguard import NetworkGuard, networks_from_env, parse_networks

    try:
        return NetworkGuard(parse_networks(allow or []) + networks_from_env())
    except ValueError as exc:
        raise ConfigurationError(f"invalid network: {exc}") from exc


def _config(
    concurrency: int, timeout: float, bucket_lease: float, claim_slack: float
) -> DispatcherConfig:
    from pgmbus.timers.dispatcher import DispatcherConfig

    return DispatcherConfig(
        concurrency=concurrency,
        timeout_s=timeout,
        bucket_lease_s=bucket_lease,
        claim_slack_s=claim_slack,
    )


def _run_fast(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on uvloop when it is installed (a cheaper event loop: the dispatcher is
    bound by the CPU spent per HTTP call), else on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency except on Windows
        asyncio.run(main)
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main)


async def _run_until_signal(dispatcher: Dispatcher) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await dispatcher.run(stop)


@reports_errors
def dispatcher_cmd(
    dsn: DsnOption = None,
    allow_network: AllowOption = None,
    concurrency: ConcurrencyOption = 64,
    timeout: TimeoutOption = 10.0,
    bucket_lease: LeaseOption = 10.0,
    claim_slack: SlackOption = 5.0,
) -> None:
    """Deliver due callbacks (and generate scheduled ones) until interrupted."""
    _require_server_extra()
    from pgmbus.timers.dispatcher import Dispatcher

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    config = _config(concurrency, timeout, bucket_lease, claim_slack)
    dispatcher = Dispatcher(resolve_dsn(dsn), config, _guard(allow_network))
    typer.echo(f"dispatcher {dispatcher.name} started", err=True)
    _run_fast(_run_until_signal(dispatcher))


@reports_errors
def serve_cmd(
    dsn: DsnOption = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8080,
    allow_network: AllowOption = None,
    dispatcher: Annotated[
        bool, typer.Option("--dispatcher/--no-dispatcher", help="Run a dispatcher inside.")
    ] = True,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, help="Creates per write (1: unbatched).")
    ] = 200,
    batch_wait_ms: Annotated[
        float, typer.Option("--batch-wait-ms", min=0, help="Longest wait to fill a batch.")
    ] = 50.0,
    concurrency: ConcurrencyOption = 64,
    timeout: TimeoutOption = 10.0,
    bucket_lease: LeaseOption = 10.0,
    claim_slack: SlackOption = 5.0,
) -> None:
    """Run the HTTP API (OpenAPI at /docs) and, by default, a dispatcher."""
    _require_server_extra()
    try:
        import uvicorn
    except ImportError as exc:
        raise ConfigurationError(f"{SERVER_EXTRA_HINT} ({exc.name} is missing)") from exc

    from pgmbus.timers.service import ServiceConfig, create_app

    config = ServiceConfig(
        dsn=resolve_dsn(dsn),
        batch_max_items=batch_size,
        batch_max_wait_s=batch_wait_ms / 1000,
        run_dispatcher=dispatcher,
        dispatcher=_config(concurrency, timeout, bucket_lease, claim_slack),
        guard=_guard(allow_network),
    )
    uvicorn.run(create_app(config), host=host, port=port, log_level="warning")


@app.command("add-client")
@reports_errors
def add_client(
    name: Annotated[str, typer.Argument(help="Client name: [a-z][a-z0-9_]*")],
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create an owner client and print its API key and signing secret (shown only once)."""

    async def go() -> store.Client:
        async with await psycopg.AsyncConnection.connect(resolve_dsn(dsn), autocommit=True) as c:
            return await store.add_client(c, name)

    client = asyncio.run(go())
    if as_json:
        print_json(
            {
                "client_id": client.id,
                "api_key": client.api_key,
                "signing_secret": client.signing_secret,
            }
        )
        return
    typer.echo(f"client {name} (id {client.id})")
    typer.echo(f"api key:        {client.api_key}")
    typer.echo(f"signing secret: {client.signing_secret}")


@app.command("clean")
@reports_errors
def clean(
    ttl_days: Annotated[int, typer.Option("--ttl-days", min=0, help="Keep this many days.")] = 30,
    dsn: DsnOption = None,
) -> None:
    """Delete finished callbacks and change log rows older than the TTL."""

    async def go() -> tuple[int, int]:
        async with await psycopg.AsyncConnection.connect(resolve_dsn(dsn), autocommit=True) as c:
            return await store.clean(c, ttl_days)

    with translating():
        callbacks, changes = asyncio.run(go())
    typer.echo(f"deleted {callbacks} callbacks and {changes} change log rows")


def register(root: Any) -> None:
    """Add ``serve``, ``dispatcher`` and the ``timers`` group to the root command."""
    root.command("serve")(serve_cmd)
    root.command("dispatcher")(dispatcher_cmd)
    root.add_typer(app, name="timers")
