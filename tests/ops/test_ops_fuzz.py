"""The whole HTTP API fuzzed from its own OpenAPI schema: ``st run <openapi> --checks all``.

Schemathesis' command line runs against a live service on 127.0.0.1 with every check it has:
no 5xx, every answer documented and matching its schema, 405 answers naming the path's methods
in ``Allow``, schema-valid requests accepted and schema-violating ones refused (the rules no
schema can state are listed, with their reasons, in ``schemathesis.toml`` at the checkout's
root, which the command reads). The suite's run is derandomized and bounded; the ``chaos`` run
is longer and random (``PGMBUS_FUZZ_EXAMPLES`` cases per operation, 100 unless set).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pgmbus.testing.server import TestServer
from tests.ops.conftest import ADMIN_SCOPES, Service, start

ROOT = Path(__file__).resolve().parents[2]
ST = Path(sys.executable).with_name("st")


@pytest.fixture(scope="module")
def fuzzed(pg_server: TestServer) -> Iterator[Service]:
    """One service for every operation (a database and a server per case would be too slow)."""
    name = pg_server.create_database()
    dsn = pg_server.dsn(name)
    base, stop = start(dsn, max_body_bytes=256 * 1024)
    svc = Service(dsn, base)
    svc.add_key("admin", ADMIN_SCOPES)
    svc.sql("SELECT mbus.create_queue('a')")
    svc.sql("SELECT mbus.create_group('a')")
    try:
        yield svc
    finally:
        stop()
        pg_server.drop_database(name)


def st_run(svc: Service, *options: str, timeout: float) -> tuple[int, str, float]:
    """Run ``st run <openapi> --checks all`` from the checkout; its exit code, output, seconds."""
    command = [
        str(ST),
        "run",
        f"{svc.base}/openapi.json",
        "--checks",
        "all",
        "--header",
        f"Authorization: Bearer {svc.keys['admin']}",
        "--no-color",
        *options,
    ]
    began = time.monotonic()
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - began


def test_api_answers_as_documented(fuzzed: Service) -> None:
    """Every check on every operation, derandomized (the same cases every run), bounded.

    The fuzzing and stateful phases take about 20 s here; the coverage phase (every boundary
    value and unsupported method of every operation, over a minute on 2 busy cores) is in the
    chaos run, and its unsupported-method check is the test below. One worker: CPython 3.11's
    ``ast.parse`` is not thread-safe, and Hypothesis parses lambdas' source in every worker
    thread (a SystemError "AST constructor recursion depth mismatch" in the tool itself).
    """
    code, output, _seconds = st_run(
        fuzzed,
        "--phases",
        "fuzzing,stateful",
        "--max-examples",
        "5",
        "--generation-deterministic",
        "--seed",
        "1",
        "--workers",
        "1",
        timeout=120,
    )
    assert code == 0, output[-20000:]
    assert "Tested: " in output and " passed" in output


def test_a_405_names_every_method_of_the_path(fuzzed: Service) -> None:
    """RFC 9110: a 405's ``Allow`` lists the methods the resource supports, all of them (one
    path has one route per method: GET and POST /v1/queues)."""
    schema = httpx.get(f"{fuzzed.base}/openapi.json", timeout=15).json()
    checked = 0
    with fuzzed.client() as c:
        for path in schema["paths"]:
            # a concrete path can match two templates (/messages/batch and /messages/{iid}):
            # its resource has the methods of both
            concrete = re.sub(r"\{[^}]+\}", "1", path)
            documented = {
                m.upper()
                for template, item in schema["paths"].items()
                if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), concrete)
                for m in item
                if m in ("get", "post", "put", "patch", "delete")
            }
            other = next(
                m for m in ("PUT", "PATCH", "DELETE", "POST", "GET") if m not in documented
            )
            r = c.request(other, concrete)
            assert r.status_code == 405, (path, other, r.status_code)
            assert set(r.headers["allow"].split(", ")) == documented, (path, r.headers["allow"])
            checked += 1
    assert checked > 40


@pytest.mark.chaos
def test_api_answers_as_documented_at_length(fuzzed: Service) -> None:
    """Every phase (the coverage phase's boundary cases too), random cases, many of them."""
    examples = os.environ.get("PGMBUS_FUZZ_EXAMPLES", "100")
    code, output, _seconds = st_run(
        fuzzed, "--max-examples", examples, "--workers", "1", timeout=3600
    )
    assert code == 0, output[-20000:]
