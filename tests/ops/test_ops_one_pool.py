"""``pgmbus serve`` calls the database on its asyncio pool only: no blocking pool, no threads."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

from psycopg_pool import ConnectionPool

import pgmbus.http
from pgmbus.http.config import ServiceConfig
from pgmbus.http.state import AppState

HTTP = Path(pgmbus.http.__file__).parent
THREAD_HOPS = {"run_in_threadpool", "to_thread", "run_in_executor"}


def test_the_service_holds_no_blocking_pool() -> None:
    async def build() -> AppState:
        return AppState(ServiceConfig(dsn="host=127.0.0.1 dbname=unused"))  # opens nothing

    state = asyncio.run(build())
    blocking = [name for name, v in vars(state).items() if isinstance(v, ConnectionPool)]
    assert blocking == []


def test_no_route_hands_work_to_a_thread_but_the_metrics_encoding() -> None:
    """Database calls run on the event loop; only prometheus' text encoding (CPU) may move."""
    hops: list[str] = []
    for path in sorted(HTTP.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in THREAD_HOPS:
                    first = node.args[0] if node.args else None
                    what = first.id if isinstance(first, ast.Name) else ast.dump(first or node)
                    hops.append(f"{path.name}:{node.lineno} {name}({what})")
    assert [h.split(" ", 1)[1] for h in hops] == ["run_in_threadpool(generate_latest)"], hops
