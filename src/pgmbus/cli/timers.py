"""``pgmbus serve``, ``pgmbus dispatcher`` and ``pgmbus timers ...`` (the CallMeBack service)."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Annotated, Any

import psycopg
import typer

from pgmbus.cli.common import DsnOption, JsonOption, database, print_json, reports_errors
from pgmbus.errors import ConfigurationError, PgmbusError, translating
from pgmbus.timers import store_async as store

if TYPE_CHECKING:  # the dispatcher and the service need the ``server`` extra (httpx, ...)
    from pgmbus.timers.dispatcher import Dispatcher, DispatcherConfig
    from pgmbus.timers.netguard import NetworkGuard

SERVER_EXTRA_HINT = "this command needs the server extra: pip install 'pgmbus[server]'"


def _require_server_extra() -> None:
    """Raise ``PgmbusError`` (exit 1) naming the extra when its packages are missing."""
    try:
        import croniter  # type: ignore[import-untyped]  # noqa: F401
        import httpx  # noqa: F401
    except ImportError as exc:
        raise PgmbusError(f"{SERVER_EXTRA_HINT} ({exc.name} is missing)") from exc


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
ClientConcurrencyOption = Annotated[
    int | None,
    typer.Option(
        "--client-concurrency",
        min=1,
        help="HTTP calls in flight for one client at most (default 3/4 of --concurrency).",
    ),
]
HostConcurrencyOption = Annotated[
    int | None,
    typer.Option(
        "--host-concurrency",
        min=1,
        help="HTTP calls in flight to one host:port at most (default 1/2 of --concurrency).",
    ),
]
StallAfterOption = Annotated[
    float,
    typer.Option(
        "--stall-after",
        min=0.01,
        help="Seconds after which a call in flight gives its slot back (a stalled call).",
    ),
]
StalledCallsOption = Annotated[
    int | None,
    typer.Option(
        "--stalled-calls",
        min=1,
        help="Stalled calls in flight at most (default 4 x --concurrency).",
    ),
]


def _guard(allow: list[str] | None) -> NetworkGuard:
    from pgmbus.timers.netguard import NetworkGuard, networks_from_env, parse_networks

    try:
        return NetworkGuard(parse_networks(allow or []) + networks_from_env())
    except ValueError as exc:
        raise ConfigurationError(f"invalid network: {exc}") from exc


def _config(
    concurrency: int,
    timeout: float,
    bucket_lease: float,
    claim_slack: float,
    client_concurrency: int | None = None,
    host_concurrency: int | None = None,
    stall_after: float = 1.0,
    stalled_calls: int | None = None,
) -> DispatcherConfig:
    from pgmbus.timers.dispatcher import DispatcherConfig

    return DispatcherConfig(
        concurrency=concurrency,
        timeout_s=timeout,
        bucket_lease_s=bucket_lease,
        claim_slack_s=claim_slack,
        client_concurrency=client_concurrency or 0,
        host_concurrency=host_concurrency or 0,
        stall_after_s=stall_after,
        stalled_calls=stalled_calls or 0,
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
    client_concurrency: ClientConcurrencyOption = None,
    host_concurrency: HostConcurrencyOption = None,
    stall_after: StallAfterOption = 1.0,
    stalled_calls: StalledCallsOption = None,
) -> None:
    """Deliver due callbacks (and generate scheduled ones) until interrupted."""
    _require_server_extra()
    from pgmbus.timers.dispatcher import Dispatcher

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    config = _config(
        concurrency,
        timeout,
        bucket_lease,
        claim_slack,
        client_concurrency,
        host_concurrency,
        stall_after,
        stalled_calls,
    )
    dispatcher = Dispatcher(database(dsn), config, _guard(allow_network))
    typer.echo(f"dispatcher {dispatcher.name} started", err=True)
    _run_fast(_run_until_signal(dispatcher))


@reports_errors
def serve_cmd(
    dsn: DsnOption = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: a free one).")
    ] = 8080,
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
    client_concurrency: ClientConcurrencyOption = None,
    host_concurrency: HostConcurrencyOption = None,
    max_body_bytes: Annotated[
        int | None,
        typer.Option(
            "--max-body-bytes",
            min=1,
            help="Largest request body accepted (413 beyond); default $PGMBUS_MAX_BODY_BYTES, "
            "else 1 MiB.",
            show_default=False,
        ),
    ] = None,
    max_listener_bytes: Annotated[
        int | None,
        typer.Option(
            "--max-listener-bytes",
            min=1,
            help="Bytes of SSE frames a live listener may have unsent before it is dropped; "
            "default $PGMBUS_MAX_LISTENER_BYTES, else 256 KiB.",
            show_default=False,
        ),
    ] = None,
    max_listeners_per_key: Annotated[
        int | None,
        typer.Option(
            "--max-listeners-per-key",
            min=1,
            help="SSE listener connections one API key may hold (429 beyond); "
            "default $PGMBUS_MAX_LISTENERS_PER_KEY, else 500.",
            show_default=False,
        ),
    ] = None,
    metrics_public: Annotated[
        bool | None,
        typer.Option(
            "--metrics-public/--metrics-private",
            help="Serve /metrics without a key (public) or to any valid key (private); "
            "default $PGMBUS_METRICS_PUBLIC, else public.",
            show_default=False,
        ),
    ] = None,
    prometheus_url: Annotated[
        str | None,
        typer.Option(
            "--prometheus-url",
            help="A Prometheus scraping /metrics: the dashboard's queue and stream charts are "
            "read from it; default $PGMBUS_PROMETHEUS_URL, else the service's own samples.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run the HTTP API (dashboard at /, OpenAPI at /docs) and, by default, a dispatcher.

    Prints the address it listens on once it accepts connections (--port 0: a free port).
    """
    _require_server_extra()
    try:
        import uvicorn
    except ImportError as exc:
        raise PgmbusError(f"{SERVER_EXTRA_HINT} ({exc.name} is missing)") from exc

    from pgmbus.http import ServiceConfig, create_app

    limits: dict[str, Any] = {}
    if max_body_bytes is not None:
        limits["max_body_bytes"] = max_body_bytes
    if max_listener_bytes is not None:
        limits["max_listener_bytes"] = max_listener_bytes
    if max_listeners_per_key is not None:
        limits["max_listeners_per_key"] = max_listeners_per_key
    if metrics_public is not None:
        limits["metrics_public"] = metrics_public
    if prometheus_url is not None:
        limits["prometheus_url"] = prometheus_url
    config = ServiceConfig(
        dsn=database(dsn),
        batch_max_items=batch_size,
        batch_max_wait_s=batch_wait_ms / 1000,
        run_dispatcher=dispatcher,
        dispatcher=_config(
            concurrency, timeout, bucket_lease, claim_slack, client_concurrency, host_concurrency
        ),
        guard=_guard(allow_network),
        **limits,
    )
    sock = _bind(host, port)
    bound = sock.getsockname()
    url = f"http://{f'[{bound[0]}]' if ':' in bound[0] else bound[0]}:{bound[1]}"

    application = create_app(config)

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # live listeners' streams never end by themselves: end them, or uvicorn would
            # wait for them forever before it stops
            await application.state.pgmbus.listeners.close()
            await super().shutdown(sockets=sockets)

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if not self.should_exit:
                typer.echo(
                    f"pgmbus serve on {url} (dashboard {url}/, API {url}/v1, "
                    f"OpenAPI {url}/docs, metrics {url}/metrics)"
                )

    logging.basicConfig(  # what the service and its dispatcher log (a lost database, ...)
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    server = Server(uvicorn.Config(application, log_level="warning"))
    server.run(sockets=[sock])


def _bind(host: str, port: int) -> socket.socket:
    """Bind the listening socket first, so that the address printed is the one in use."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


@app.command("add-client")
@reports_errors
def add_client(
    name: Annotated[str, typer.Argument(help="Client name: [a-z][a-z0-9_]*")],
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create an owner client and print its API key and signing secret (shown only once)."""

    async def go() -> store.Client:
        async with await psycopg.AsyncConnection.connect(target, autocommit=True) as c:
            return await store.add_client(c, name)

    target = database(dsn)
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
        async with await psycopg.AsyncConnection.connect(target, autocommit=True) as c:
            return await store.clean(c, ttl_days)

    target = database(dsn)
    with translating():
        callbacks, changes = asyncio.run(go())
    typer.echo(f"deleted {callbacks} callbacks and {changes} change log rows")


def register(root: Any) -> None:
    """Add ``serve``, ``dispatcher`` and the ``timers`` group to the root command."""
    root.command("serve")(serve_cmd)
    root.command("dispatcher")(dispatcher_cmd)
    root.add_typer(app, name="timers")
