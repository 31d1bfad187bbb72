"""Body limits on every route (timers included), chunked bodies, and the package layering."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import pgmbus
from pgmbus.errors import ConfigurationError
from pgmbus.http import ServiceConfig
from tests.ops.conftest import Service


def test_body_limit_covers_timers_and_chunked_bodies(service: Service) -> None:
    # the default limit is 1 MiB: a 2 MB callback context is refused before it is stored
    hook = {
        "group_key": "g",
        "event_key": "e",
        "run_at": "2999-01-01T00:00:00Z",
        "url": "https://example.org/h",
        "context": {"blob": "x" * 2_000_000},
    }
    with service.client() as c:
        r = c.post("/v1/callbacks", json=hook)
        assert r.status_code == 413
        assert r.json() == {
            "error": "too_large",
            "message": "request body over 1048576 bytes",
        }

        def chunks() -> Iterator[bytes]:
            yield b'{"data": {"blob": "'
            for _ in range(40):
                yield b"y" * 65536
            yield b'"}}'

        c.post("/v1/queues", json={"queue": "q"})
        r = c.post(
            "/v1/queues/q/messages", content=chunks(), headers={"content-type": "application/json"}
        )
        assert r.status_code == 413 and r.json()["error"] == "too_large"
    assert service.value("SELECT count(*) FROM mbus.timer_callbacks") == 0
    assert service.value("SELECT count(*) FROM mbus.q_q") == 0


def test_engines_do_not_import_the_http_layer() -> None:
    root = Path(pgmbus.__file__).parent
    for engine in ("queues", "streams", "timers", "spark"):
        for path in (root / engine).rglob("*.py"):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                for name in names:
                    assert not name.startswith(("pgmbus.http", "pgmbus.cli", "fastapi")), (
                        path,
                        name,
                    )


def test_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGMBUS_MAX_BODY_BYTES", "4096")
    monkeypatch.setenv("PGMBUS_METRICS_PUBLIC", "false")
    config = ServiceConfig(dsn="postgresql:///x")
    assert (config.max_body_bytes, config.metrics_public) == (4096, False)
    monkeypatch.setenv("PGMBUS_MAX_BODY_BYTES", "1e9")
    with pytest.raises(ConfigurationError, match="PGMBUS_MAX_BODY_BYTES"):
        ServiceConfig(dsn="postgresql:///x")
