"""``pgmbus metrics --listen`` (a process that only exports) and ``pgmbus key`` (API key scopes)."""

from __future__ import annotations

import signal
import threading
from typing import Annotated, Any

import typer
from psycopg_pool import ConnectionPool

from pgmbus.cli.common import (
    CONNECT_TIMEOUT_S,
    DsnOption,
    JsonOption,
    connect,
    console,
    database,
    print_json,
    reports_errors,
)
from pgmbus.data import service as service_data
from pgmbus.errors import ConfigurationError, PgmbusError, translating

key_app = typer.Typer(help="API keys of the HTTP service: scopes.", no_args_is_help=True)


def _listen_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise typer.BadParameter(f"wants HOST:PORT, not {text!r}", param_hint="--listen")
    return host.strip("[]") or "127.0.0.1", int(port)


@reports_errors
def metrics_cmd(
    dsn: DsnOption = None,
    listen: Annotated[
        str, typer.Option("--listen", help="HOST:PORT of the /metrics endpoint.")
    ] = "127.0.0.1:9187",
    late_after: Annotated[
        float, typer.Option("--late-after", min=0, help="Seconds due before a timer is late.")
    ] = 5.0,
    window: Annotated[
        float,
        typer.Option(
            "--window",
            min=1,
            help="Seconds back (by start) a scrape looks for timer calls recorded since the last.",
        ),
    ] = 300.0,
) -> None:
    """Serve Prometheus metrics (one SQL snapshot per scrape) until interrupted."""
    try:
        from prometheus_client import start_http_server

        from pgmbus.http import fetch_snapshot, registry_for
    except ImportError as exc:
        raise PgmbusError(
            f"this command needs the server extra: pip install 'pgmbus[server]' ({exc.name} is "
            "missing)"
        ) from exc

    host, port = _listen_address(listen)
    pool: ConnectionPool[Any] = ConnectionPool(
        database(dsn),
        min_size=1,
        max_size=1,
        kwargs={"autocommit": False},
        timeout=CONNECT_TIMEOUT_S + 1,
    )

    def snapshot(after_xid: int | None) -> dict[str, Any]:
        with pool.connection() as conn:
            return fetch_snapshot(
                conn, late_after_s=late_after, window_s=window, after_xid=after_xid
            )

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        server, thread = start_http_server(port, host, registry_for(snapshot))
    except OSError as exc:  # a port already taken: the command line's fault (exit 2)
        pool.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    console.print(f"pgmbus metrics on http://{host}:{port}/metrics", highlight=False)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        thread.join(5)
        pool.close()


@key_app.command("scopes")
@reports_errors
def set_scopes(
    name: Annotated[str, typer.Argument(help="The client (pgmbus timers add-client NAME).")],
    scopes: Annotated[
        list[str] | None,
        typer.Argument(help="engine:action:glob, e.g. queues:post:orders_* (none: clear)"),
    ] = None,
    dsn: DsnOption = None,
) -> None:
    """Replace a key's scopes (engine queues|streams|timers, action read|consume|post|write)."""
    with connect(dsn) as conn, translating():
        stored = service_data.set_scopes(conn, name, scopes or [])
    console.print(f"{name}: {' '.join(stored) or '(no scopes)'}", highlight=False)


@key_app.command("list")
@reports_errors
def list_keys(dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """Clients with their scopes (API keys are stored hashed and never shown again)."""
    with connect(dsn) as conn, translating():
        rows = service_data.list_clients(conn)
    if as_json:
        print_json([{"id": r[0], "name": r[1], "scopes": r[2], "created_at": r[3]} for r in rows])
        return
    for r in rows:
        console.print(f"{r[1]}\t{' '.join(r[2]) or '(own timers only)'}", highlight=False)


def register(root: Any) -> None:
    """Add ``metrics`` and the ``key`` group to the root command."""
    root.command("metrics")(metrics_cmd)
    root.add_typer(key_app, name="key")
