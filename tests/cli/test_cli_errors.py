"""User errors end as one line on stderr and a non-zero exit, never a traceback, for every command.

Walks the whole command tree with a refused port, an unresolvable host and a database without the
schema, then runs a table of bad inputs against a real installed database.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from pgmbus.testing.server import TestServer
from tests.cli.conftest import commands, error_line, run, run_process

COMMANDS = list(commands())


@pytest.fixture(scope="module")
def q_dsn(pg_server: TestServer) -> Iterator[str]:
    """One database with queue q for the module's error cases (they change nothing in it)."""
    name = pg_server.create_database()
    dsn = pg_server.dsn(name)
    assert run("queue", "create", "q", "--dsn", dsn).exit_code == 0
    yield dsn
    pg_server.drop_database(name)


def test_the_walk_covers_the_command_tree() -> None:
    paths = {c.path for c in COMMANDS}
    for expected in [
        ("queue", "post"),
        ("queue", "consumer"),  # hidden alias
        ("streams", "dead-letters"),  # hidden alias
        ("worker",),
        ("serve",),
        ("top",),
        ("key", "scopes"),
        ("pipeline", "archive"),
    ]:
        assert expected in paths
    assert len(paths) >= 45


@pytest.mark.parametrize(
    ("dsn", "reason"),
    [
        ("host=127.0.0.1 port=1", "Connection refused"),
        ("host=pgmbus-no-such-host.invalid port=5432", "failed to resolve host"),
    ],
)
def test_every_command_fails_fast_on_a_bad_dsn(dsn: str, reason: str) -> None:
    for command in COMMANDS:
        started = time.monotonic()
        result = run(*command.argv(dsn))
        elapsed = time.monotonic() - started
        assert result.exit_code == 1, (command.path, result.output)
        line = error_line(result)
        assert "cannot connect to the database" in line and reason in line, line
        assert elapsed < 5, (command.path, elapsed)


def test_every_command_says_run_pgmbus_install_on_a_database_without_schema(
    bare_dsn: str,
) -> None:
    for command in COMMANDS:
        if command.path == ("install",):
            continue
        result = run(*command.argv(bare_dsn))
        if command.path == ("status",):
            assert result.exit_code == 1  # says so, and a script's check fails
            assert "run `pgmbus install`" in result.stdout
            continue
        assert result.exit_code == 1, (command.path, result.output)
        assert "run `pgmbus install`" in error_line(result), command.path


def test_bad_dsn_through_a_real_process_within_five_seconds() -> None:
    for args in (["queue", "list"], ["streams", "groups"], ["status"]):
        started = time.monotonic()
        proc = run_process(*args, "--dsn", "host=127.0.0.1 port=1")
        assert time.monotonic() - started < 5
        assert proc.returncode == 1
        assert "Traceback" not in proc.stderr
        assert proc.stderr.count("\n") == 1 and "Connection refused" in proc.stderr


USAGE_ERRORS = [
    (["queue", "post", "q", "{bad"], "Invalid value for data: not valid JSON"),
    (["queue", "post", "q", "[1]"], "must be a JSON object"),
    (["queue", "post", "q", "{}", "--properties", "7"], "properties: must be a JSON object"),
    (["queue", "post", "q", "{}", "--at", "tomorrow"], "not an ISO 8601 timestamp"),
    (["queue", "post", "q", "{}", "--at", "2030-01-01", "--delay", "5"], "not both"),
    (["queue", "request", "q", "nope"], "DATA: not valid JSON"),
    (["queue", "consume", "q", "--max", "0"], "--max"),
    (["streams", "publish", "t", "{x"], "PAYLOAD: not valid JSON"),
    (["streams", "publish", "t", "{}", "--headers", "[]"], "--headers: must be a JSON object"),
    (["worker", "nomodule", "-q", "q"], "module:function"),
    (["worker", "pgmbus_no_such_module:handle", "-q", "q"], "No module named"),
    (["worker", "json:no_such_function", "-q", "q"], "no_such_function"),
    (["saga", "worker", "nocolon", "-q", "q"], "module:function"),
    (["worker", "json:loads"], "not a Bus, AsyncBus or App"),
    (["worker", "tests.cli.worker_app:app", "--health", "nowhere"], "HOST:PORT"),
    (["worker", "json:loads", "-q", "q", "--pool", "fork"], "expected one of thread, process"),
    (["worker", "json:loads", "-q", "q", "--timeout", "0"], "--timeout"),
    (
        ["worker", "tests.cli.worker_app:app", "--pool", "process", "--placement-home", "x"],
        "--pool",
    ),
    (["queue", "no-such-command"], "No such command"),
    (["saga", "list", "--state", "bogus"], "not one of running"),
    (["queue", "post"], "Missing argument"),
    (["pipeline", "archive", "--path", "/tmp/x", "--older-than", "soon"], "invalid duration"),
    (["metrics", "--listen", "nowhere"], "HOST:PORT"),
    (["metrics", "--listen", "127.0.0.1:70000"], "HOST:PORT"),
    (["serve", "--port", "70000"], "--port"),
    (["dmq", "list", "--limit", "-3"], "--limit"),
    (["queue", "post", "q", '{"a": ' + "[" * 3000 + "]" * 3000 + "}"], "JSON nested too deep"),
    (["streams", "publish", "t", "[" * 3000 + "]" * 3000], "PAYLOAD: JSON nested too deep"),
]


@pytest.mark.parametrize(("args", "expected"), USAGE_ERRORS)
def test_usage_errors_exit_2_with_one_line(q_dsn: str, args: list[str], expected: str) -> None:
    result = run(*args, "--dsn", q_dsn)
    assert result.exit_code == 2, result.output
    assert expected in error_line(result)


RUNTIME_ERRORS = [
    (["queue", "post", "nosuch", "{}"], "queue 'nosuch' does not exist"),
    (["queue", "stats", "nosuch"], "queue 'nosuch' does not exist"),
    (["queue", "consume", "nosuch"], "queue 'nosuch' does not exist"),
    (["queue", "drop", "nosuch"], "queue 'nosuch' does not exist"),
    (["queue", "rotate", "nosuch"], "queue 'nosuch' does not exist"),
    (["queue", "request", "nosuch", "{}"], "queue 'nosuch' does not exist"),
    (["queue", "create-consumer", "nosuch", "c"], "queue 'nosuch' does not exist"),
    (["queue", "drop-consumer", "q", "nosuch"], "nosuch"),
    (["queue", "create", "Bad-Name"], "Bad-Name"),
    (["dmq", "list", "--queue", "nosuch"], "queue 'nosuch' does not exist"),
    (["dmq", "replay", "999"], "999 does not exist"),
    (["streams", "drop-group", "nosuch"], "group 'nosuch' does not exist"),
    (["streams", "seek", "nosuch", "now"], "group 'nosuch' does not exist"),
    (["streams", "read", "nosuch"], "group 'nosuch' does not exist"),
    (["streams", "dmq", "nosuch"], "group 'nosuch' does not exist"),
    (["streams", "dmq-replay", "nosuch", "1"], "nosuch"),
    (["key", "scopes", "nosuch", "queues:post:*"], "'nosuch' does not exist"),
]


@pytest.mark.parametrize(("args", "expected"), RUNTIME_ERRORS)
def test_runtime_errors_exit_1_with_one_line(q_dsn: str, args: list[str], expected: str) -> None:
    result = run(*args, "--dsn", q_dsn)
    assert result.exit_code == 1, result.output
    assert expected in error_line(result)
