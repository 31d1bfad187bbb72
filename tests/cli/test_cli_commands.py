"""The commands as a person uses them: version, status advice, wrapping lists, JSON, vocabulary
aliases, delays, the DSN rule from the environment, ``top``, ``serve`` and ``dev psql``."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from psycopg.conninfo import conninfo_to_dict

from pgmbus import __version__, schema
from pgmbus.cli import common
from pgmbus.testing.server import TestServer
from tests.cli.conftest import ROOT, error_line, process_env, run, run_process
from tests.processes import reap, stop, wait_until

LONG_QUEUE = "orders_eu_warehouse_q4x"
LONG_CONSUMER = "billing_nightly_reconcil"


@pytest.fixture(scope="module")
def dsn(pg_server: TestServer) -> Iterator[str]:
    """One database for the module: queue LONG_QUEUE with LONG_CONSUMER, queue q, group g."""
    name = pg_server.create_database()
    target = pg_server.dsn(name)
    for args in (
        ["queue", "create", LONG_QUEUE],
        ["queue", "create-consumer", LONG_QUEUE, LONG_CONSUMER],
        ["queue", "create", "q"],
        ["streams", "create-group", "g", "--start", "beginning"],
        ["streams", "publish", "t", '{"n": 1}'],
    ):
        result = run(*args, "--dsn", target)
        assert result.exit_code == 0, result.output
    yield target
    pg_server.drop_database(name)


def test_version() -> None:
    result = run("--version")
    assert result.exit_code == 0
    latest = max(m.version for m in schema.migrations())
    assert result.stdout.strip() == f"pgmbus {__version__} (schema version {latest})"


def test_a_group_without_a_command_shows_its_help() -> None:
    for args in ([], ["queue"]):
        result = run(*args)
        assert result.exit_code == 2
        assert "Usage" in result.output and "error:" not in result.output
    assert "top" in run("--help").stdout


def test_status_gives_one_piece_of_advice(make_db: Callable[..., str], dsn: str) -> None:
    bare = make_db(installed=False)
    before = run("status", "--dsn", bare)
    assert before.exit_code == 1
    assert before.stdout.count("run `pgmbus") == 1
    assert "run `pgmbus install`" in before.stdout and "upgrade" not in before.stdout
    assert json.loads(run("status", "--dsn", bare, "--json").stdout)["advice"] == (
        "the mbus schema is not installed: run `pgmbus install`"
    )
    after = run("status", "--dsn", dsn)
    assert "up to date" in after.stdout and "run `pgmbus" not in after.stdout
    assert json.loads(run("status", "--dsn", dsn, "--json").stdout)["advice"] is None


def _first_column(table: str) -> str:
    cells = [line.split("│")[1].strip() for line in table.splitlines() if line.startswith("│")]
    return "".join(cells)


def test_lists_wrap_names_instead_of_cutting_them(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(common.console, "width", 40)
    # a narrow terminal (piped output is plain and unwrapped: test_first_contact_output.py)
    monkeypatch.setattr(common.console, "_force_terminal", True)
    monkeypatch.setattr(common.console, "_color_system", None)
    for args in (["queue", "list"], ["queue", "stats", LONG_QUEUE]):
        out = run(*args, "--dsn", dsn).stdout
        assert "…" not in out
        assert max(len(line) for line in out.splitlines()) <= 40
        assert LONG_QUEUE in _first_column(out), out
    stats = run("queue", "stats", LONG_QUEUE, "--dsn", dsn).stdout
    consumers = "".join(
        line.split("│")[2].strip() for line in stats.splitlines() if line.startswith("│")
    )
    assert LONG_CONSUMER in consumers


@pytest.mark.parametrize(
    "args",
    [
        ["queue", "list"],
        ["queue", "stats"],
        ["queue", "waiting"],
        ["dmq", "list"],
        ["saga", "list"],
        ["streams", "groups"],
        ["streams", "dmq", "g"],
        ["key", "list"],
        ["status"],
        ["maintain"],
        ["top"],
    ],
)
def test_every_list_and_stats_command_speaks_json(dsn: str, args: list[str]) -> None:
    extra = [] if args == ["streams", "dmq", "g"] else ["--json"]
    result = run(*args, *extra, "--dsn", dsn)
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)


def test_queue_stats_json_names_the_consumer(dsn: str) -> None:
    rows = json.loads(run("queue", "stats", LONG_QUEUE, "--json", "--dsn", dsn).stdout)
    assert {r["consumer"] for r in rows} >= {LONG_CONSUMER}


def test_one_vocabulary_with_the_old_spellings_as_hidden_aliases(dsn: str) -> None:
    queue_help = run("queue", "--help").stdout
    assert "create-consumer" in queue_help and "drop-consumer" in queue_help
    assert not re.search(r"│ consumer\s", queue_help)
    streams_help = run("streams", "--help").stdout
    assert "dmq-replay" in streams_help and "dead-letters" not in streams_help
    consume_help = run("queue", "consume", "--help").stdout
    assert "--limit" in consume_help and "--amount" not in consume_help
    assert "--max-events" not in run("streams", "read", "--help").stdout
    # the old spellings still work
    assert run("queue", "consumer", "q", "old", "--dsn", dsn).exit_code == 0
    assert run("queue", "drop-consumer", "q", "old", "--dsn", dsn).exit_code == 0
    assert run("queue", "consumer", "q", "old2", "--dsn", dsn).exit_code == 0
    assert run("queue", "consumer", "q", "old2", "--drop", "--dsn", dsn).exit_code == 0
    for _ in range(3):
        run("queue", "post", "q", '{"k": 1}', "--dsn", dsn)
    old = run("queue", "consume", "q", "--amount", "2", "--dsn", dsn)
    assert len(old.stdout.splitlines()) == 2
    run("queue", "post", "q", '{"k": 2}', "--dsn", dsn)
    older = run("queue", "consume", "q", "--max", "5", "--dsn", dsn)
    assert len(older.stdout.splitlines()) == 2
    new = run("queue", "consume", "q", "--limit", "5", "--dsn", dsn)
    assert new.exit_code == 0 and "no message" in new.output and "iid" not in new.output
    assert json.loads(run("streams", "dead-letters", "g", "--dsn", dsn).stdout) == []
    read = run("streams", "read", "g", "--max-events", "1", "--dsn", dsn)
    assert read.exit_code == 0 and len(read.stdout.splitlines()) == 1
    read = run("streams", "read", "g", "--max", "1", "--dsn", dsn)
    assert read.exit_code == 0 and len(read.stdout.splitlines()) == 1


def test_post_with_delay_or_delayed_until(dsn: str) -> None:
    run("queue", "create", "later", "--dsn", dsn)
    for when in (
        ["--delayed-until", "2999-01-01T00:00:00"],
        ["--delay", "3600"],
        ["--at", "2000-01-01"],  # the short spelling of --delayed-until
    ):
        assert run("queue", "post", "later", "{}", *when, "--dsn", dsn).exit_code == 0
    [row] = json.loads(run("queue", "stats", "later", "--json", "--dsn", dsn).stdout)
    assert (row["delayed"], row["ready"]) == (2, 1)


def test_the_dsn_rule_from_libpq_variables(dsn: str) -> None:
    params = conninfo_to_dict(dsn)
    env = {
        "PGMBUS_DSN": None,
        "PGMBUS_HOME": tempfile.mkdtemp() + "/none",
        "PGHOST": str(params["host"]),
        "PGPORT": str(params["port"]),
        "PGUSER": str(params["user"]),
        "PGDATABASE": str(params["dbname"]),
    }
    result = run("status", "--json", env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["database"] == params["dbname"]


def test_no_database_found_is_a_usage_error_that_says_how_to_start_one() -> None:
    home = Path(tempfile.mkdtemp()) / "none"
    env: dict[str, str | None] = {"PGMBUS_DSN": None, "PGMBUS_HOME": str(home), "PGSERVICE": None}
    env.update(dict.fromkeys(("PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER")))
    result = run("queue", "list", env=env)
    assert result.exit_code == 2
    line = error_line(result)
    assert "$PGMBUS_DSN" in line and "PGHOST" in line and "`pgmbus dev start`" in line
    assert not home.exists()


def test_top_once_shows_queues_groups_and_timers(dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common.console, "width", 200)
    run("queue", "post", LONG_QUEUE, "{}", "--dsn", dsn)
    out = run("top", "--once", "--dsn", dsn).stdout
    for word in ("queues", "stream groups", "timers", LONG_QUEUE, LONG_CONSUMER, "lag (s)", "late"):
        assert word in out
    snapshot = json.loads(run("top", "--json", "--dsn", dsn).stdout)
    [row] = [q for q in snapshot["queues"] if q["consumer"] == LONG_CONSUMER]
    assert row["depth"] >= 1
    assert [g["pending"] for g in snapshot["groups"] if g["group"] == "g"] == [1]


def _wait_for(path: Path, text: str, proc: subprocess.Popen[str], count: int = 1) -> str:
    """What the process wrote once ``text`` is in it ``count`` times (fails if it exits first)."""
    wait_until(
        lambda: path.read_text(errors="replace").count(text) >= count,
        proc=proc,
        what=f"{text!r} x{count} in {path.name}",
    )
    return path.read_text(errors="replace")


def test_top_refreshes_and_stops_cleanly_on_ctrl_c(dsn: str, tmp_path: Path) -> None:
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pgmbus", "top", "--interval", "0.2", "--dsn", dsn],
            stdout=stdout,
            stderr=stderr,
            text=True,
            env=process_env({"TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1", "COLUMNS": "120"}),
            cwd=ROOT,
        )
        try:
            frames = _wait_for(out, "pgmbus top", proc).count("pgmbus top")
            _wait_for(out, "pgmbus top", proc, count=frames + 2)  # it refreshes by itself
            assert stop(proc, signal.SIGINT).returncode == 0
        finally:
            reap(proc)
    assert "Traceback" not in err.read_text()


def test_serve_prints_where_it_listens_and_takes_the_limit_flags(dsn: str, tmp_path: Path) -> None:
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pgmbus",
                "serve",
                "--port",
                "0",
                "--no-dispatcher",
                "--max-body-bytes",
                "64",
                "--metrics-private",
                "--dsn",
                dsn,
            ],
            stdout=stdout,
            stderr=stderr,
            text=True,
            env=process_env(),
            cwd=ROOT,
        )
        try:
            line = _wait_for(out, "metrics", proc)
            match = re.search(r"pgmbus serve on (http://127\.0\.0\.1:\d+) ", line)
            assert match, line
            base = match.group(1)
            assert httpx.get(f"{base}/healthz").status_code == 200
            assert httpx.get(f"{base}/metrics").status_code == 401  # --metrics-private
            big = httpx.post(f"{base}/v1/queues", json={"queue": "x" * 100})
            assert big.status_code == 413  # --max-body-bytes 64
            stop(proc, signal.SIGINT)  # it exits by itself (130, as interrupted)
        finally:
            reap(proc)
    assert "Traceback" not in err.read_text()


def test_serve_on_a_port_in_use_is_one_line(dsn: str) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("serve", "--port", str(port), "--dsn", dsn)
    assert result.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in error_line(result)


def test_metrics_on_a_port_in_use_is_a_usage_error(dsn: str) -> None:
    """Main: exit 1 with "[Errno 98] Address already in use"; serve said it as exit 2."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("metrics", "--listen", f"127.0.0.1:{port}", "--dsn", dsn)
    assert result.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in error_line(result)


def test_dev_psql_passes_its_arguments(pg_server: TestServer) -> None:
    if pg_server.cluster is None:
        pytest.skip("the session server is external (PGMBUS_TEST_DSN)")
    proc = run_process(
        "dev",
        "psql",
        "--",
        "-A",
        "-t",
        "-c",
        "select 40 + 2",
        env={"PGMBUS_HOME": str(pg_server.cluster.home)},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "42"
