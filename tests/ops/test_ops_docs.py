"""OpenAPI, Swagger UI and ReDoc from the package (no CDN), and the CLI for key scopes."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import httpx
import psycopg
import pytest

from tests.ops.conftest import Service


def test_docs_work_offline(service: Service) -> None:
    with httpx.Client(base_url=service.base) as c:
        for page in ("/docs", "/redoc", "/"):
            html = c.get(page).text
            urls = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
            urls += re.findall(r"""url: ?['"]([^'"]+)['"]""", html)
            assert urls, page
            for url in urls:
                assert not url.startswith(("http:", "https:", "//")), (page, url)
                if url.startswith("/") and not url.startswith(("/docs", "/redoc", "/metrics")):
                    r = c.get(url)
                    assert r.status_code == 200, (page, url)
        assert len(c.get("/_assets/docs/swagger-ui-bundle.js").content) > 500_000
        assert len(c.get("/_assets/docs/redoc.standalone.js").content) > 500_000


def test_openapi_is_complete(service: Service) -> None:
    spec = httpx.get(service.base + "/openapi.json", timeout=60).json()
    paths = spec["paths"]
    for path in (
        "/v1/callbacks",
        "/v1/schedules",
        "/v1/queues",
        "/v1/queues/{queue}/stats",
        "/v1/queues/{queue}/messages",
        "/v1/queues/{queue}/messages/batch",
        "/v1/queues/{queue}/lease",
        "/v1/queues/{queue}/ack",
        "/v1/queues/{queue}/nack",
        "/v1/queues/{queue}/extend",
        "/v1/queues/{queue}/bury",
        "/v1/queues/{queue}/dmq",
        "/v1/queues/{queue}/dmq/{dmq_id}",
        "/v1/queues/{queue}/dmq/{dmq_id}/replay",
        "/v1/streams/events",
        "/v1/streams/events/batch",
        "/v1/streams/groups",
        "/v1/streams/groups/{group}",
        "/v1/streams/groups/{group}/seek",
        "/v1/streams/groups/{group}/read",
        "/v1/streams/groups/{group}/commit",
        "/v1/streams/groups/{group}/dmq",
        "/v1/streams/groups/{group}/dmq/{event_id}/replay",
        "/metrics",
        "/healthz",
        "/v1/whoami",
    ):
        assert path in paths, path
    error = {"$ref": "#/components/schemas/ErrorBody"}
    for path, ops in paths.items():
        if not path.startswith("/v1/"):
            continue
        for method, op in ops.items():
            assert op.get("description") or op.get("summary"), (method, path)
            for code in ("401", "422"):
                if code == "422" and method == "get" and not op.get("parameters"):
                    continue
                schema = op["responses"][code]["content"]["application/json"]["schema"]
                assert schema == error, (method, path, code)
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


def test_key_scopes_from_the_command_line(service: Service) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def pgmbus(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pgmbus", *args, "--dsn", service.dsn],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )

    key = str(service.value("SELECT api_key FROM mbus.timer_add_client('ci')"))
    done = pgmbus("key", "scopes", "ci", "queues:post:orders_*", "streams:read:*")
    assert done.returncode == 0, done.stderr
    assert "ci: queues:post:orders_* streams:read:*" in done.stdout
    bad = pgmbus("key", "scopes", "ci", "queues:delete:*")
    assert bad.returncode == 1 and "invalid scopes" in bad.stderr
    assert "Traceback" not in bad.stderr
    listed = [line.split() for line in pgmbus("key", "list").stdout.splitlines()]
    assert ["ci", "queues:post:orders_*", "streams:read:*"] in listed
    with service.client() as admin:
        admin.post("/v1/queues", json={"queue": "orders_eu"})
    with httpx.Client(base_url=service.base, headers={"authorization": f"Bearer {key}"}) as c:
        assert c.post("/v1/queues/orders_eu/messages", json={"data": {}}).status_code == 201
        assert c.get("/v1/whoami").json() == {
            "client": "ci",
            "scopes": ["queues:post:orders_*", "streams:read:*"],
        }


def test_the_table_refuses_malformed_scopes(service: Service) -> None:
    service.sql("SELECT mbus.timer_add_client('x')")
    for bad in (["queues:delete:*"], ["queues:read:"], ["queues:read:a b"], ["x"], [None]):
        with pytest.raises(psycopg.errors.CheckViolation):
            service.sql("UPDATE mbus.timer_clients SET scopes = %s WHERE name = 'x'", (bad,))
    good = ["queues:read:*", "streams:post:orders.*", "timers:read:shop"]
    service.sql("UPDATE mbus.timer_clients SET scopes = %s WHERE name = 'x'", (good,))
    assert service.value("SELECT scopes FROM mbus.timer_clients WHERE name = 'x'") == good
