"""The whole HTTP API fuzzed from its own OpenAPI schema (Schemathesis): no 5xx, and every
answer (4xx included) is documented and matches its schema."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from pgmbus.testing.server import TestServer
from tests.ops.conftest import ADMIN_SCOPES, Service, start

# a dozen derandomized cases per operation in the suite; more with $PGMBUS_FUZZ_EXAMPLES
EXAMPLES = int(os.environ.get("PGMBUS_FUZZ_EXAMPLES", "12"))
DERANDOMIZE = "PGMBUS_FUZZ_EXAMPLES" not in os.environ

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


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


def test_api_answers_as_documented(fuzzed: Service) -> None:
    """Every operation, a dozen generated requests each (derandomized: the same every run)."""
    schema = schemathesis.openapi.from_url(fuzzed.base + "/openapi.json")
    headers = {"authorization": f"Bearer {fuzzed.keys['admin']}"}
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 40
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            derandomize=DERANDOMIZE,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def run(case: Any) -> None:
            case.call_and_validate(headers=headers, checks=CHECKS, timeout=30)

        try:
            run()
        except (
            Exception,
            BaseExceptionGroup,
        ) as exc:  # collect every operation's failure, then report them all
            failures.append(f"{operation.label}: {exc}"[:3000])
    assert not failures, "\n\n".join(failures)
