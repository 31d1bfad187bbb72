"""The wheel tier: pgmbus installed from its wheel into a fresh venv, used as a user would.

One venv for the module (``wheel_env``): the base install first, then ``[server]``,
``[django]``, ``[celery]`` and ``[spark]`` from the same wheel. Every command runs from a
directory outside the checkout with no PYTHONPATH; the test server of the session is the
database. Each test asks for the extra it needs, so any one of them runs on its own.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from pgmbus import __version__
from pgmbus.testing.server import TestServer
from tests.test_docs_examples import Block, blocks_of, split_sql
from tests.wheel.conftest import EXTRA_ONLY, ROOT, WheelEnv, clean_env

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def fresh_dsn(pg_server: TestServer) -> Iterator[str]:
    """A database without the mbus schema (the wheel's ``pgmbus install`` makes it)."""
    name = pg_server.create_database(installed=False)
    yield pg_server.dsn(name)
    pg_server.drop_database(name)


@pytest.fixture
def background(wheel_env: WheelEnv) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start long-running programs of the venv; each is stopped (SIGTERM, then SIGKILL)."""
    started: list[subprocess.Popen[str]] = []

    def start(
        *args: str, log: Path, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.Popen[str]:
        program = str(wheel_env.bin / args[0]) if (wheel_env.bin / args[0]).exists() else args[0]
        with log.open("w") as out:
            proc = subprocess.Popen(
                [program, *args[1:]],
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
                cwd=cwd or wheel_env.home,
                env=env or clean_env(),
                start_new_session=True,
            )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in started:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def wait_for(check: Callable[[], object], what: str, timeout: float = 60.0) -> object:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
    return found


def rows(dsn: str, query: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(query.encode()).fetchall()


def sql(dsn: str, statement: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(statement.encode())


# --- the base install --------------------------------------------------------------------------

# Runs the README's blocks in the venv: SQL statement by statement in autocommit (as psql does),
# Python in one namespace, with PGMBUS_DSN naming the database (the DSN rule reads it).
README_RUNNER = """
import json, sys
import psycopg
blocks = json.load(open(sys.argv[1]))
namespace = {"__name__": "__readme__"}
with psycopg.connect(sys.argv[2], autocommit=True) as conn:
    for block in blocks:
        if block["lang"] == "sql":
            for statement in block["statements"]:
                conn.execute(statement.encode())
        else:
            exec(compile(block["code"], block["where"], "exec"), namespace)
print("readme ok")
"""


def one_minute_blocks() -> list[Block]:
    """The runnable blocks of the README's "In one minute" section, in order."""
    lines = (ROOT / "README.md").read_text("utf-8").splitlines()
    start = next(i for i, line in enumerate(lines, 1) if line.startswith("## In one minute"))
    end = next(
        (i for i, line in enumerate(lines, 1) if i > start and line.startswith("## ")),
        len(lines) + 1,
    )
    found = [b for b in blocks_of(ROOT / "README.md") if start < b.line < end and b.runs]
    assert {b.lang for b in found} == {"sql", "python"}, "the section shows SQL and Python"
    return found


def test_base_install_runs_the_readme_and_has_no_extra(
    wheel_env: WheelEnv, fresh_dsn: str, tmp_path: Path
) -> None:
    assert wheel_env.base_imports == [], f"the base install brought {wheel_env.base_imports}"
    where = wheel_env.run("python", "-c", "import pgmbus; print(pgmbus.__file__)").stdout
    assert where.startswith(str(wheel_env.root)), where  # the wheel's copy, not the checkout

    version = wheel_env.run("pgmbus", "--version").stdout.strip()
    assert re.fullmatch(rf"pgmbus {re.escape(__version__)} \(schema version \d+\)", version)

    bare = wheel_env.run("pgmbus", "status", "--dsn", fresh_dsn, check=False)
    assert bare.returncode == 1 and "pgmbus install" in bare.stdout, bare

    installed = wheel_env.run("pgmbus", "install", "--dsn", fresh_dsn)
    assert "applied 0001_base" in installed.stdout and "applied the function set" in (
        installed.stdout
    ), installed.stdout

    blocks = [
        {
            "lang": b.lang,
            "where": b.where,
            "code": b.code,
            "statements": split_sql(b.code) if b.lang == "sql" else [],
        }
        for b in one_minute_blocks()
    ]
    (tmp_path / "blocks.json").write_text(json.dumps(blocks))
    (tmp_path / "run_readme.py").write_text(README_RUNNER)
    done = wheel_env.run(
        "python",
        str(tmp_path / "run_readme.py"),
        str(tmp_path / "blocks.json"),
        fresh_dsn,
        env=clean_env(PGMBUS_DSN=fresh_dsn),
    )
    assert "readme ok" in done.stdout
    assert rows(fresh_dsn, "SELECT address FROM sent") == [("a@example.org",)]
    assert rows(fresh_dsn, "SELECT order_id FROM invoices") == [(42,)]

    status = wheel_env.run("pgmbus", "status", "--dsn", fresh_dsn)
    assert "up to date" in status.stdout and "functions: match this package" in status.stdout
    report = json.loads(wheel_env.run("pgmbus", "status", "--dsn", fresh_dsn, "--json").stdout)
    assert report["up_to_date"] is True and report["package_version"] == __version__


# --- [server] ----------------------------------------------------------------------------------


def test_server_extra_serves_health_metrics_docs_and_the_dashboard(
    wheel_env: WheelEnv,
    fresh_dsn: str,
    background: Callable[..., subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    wheel_env.need("server")
    wheel_env.run("pgmbus", "install", "--dsn", fresh_dsn)
    log = tmp_path / "serve.log"
    proc = background(
        "pgmbus", "serve", "--port", "0", "--no-dispatcher", "--dsn", fresh_dsn, log=log
    )

    def address() -> str | None:
        assert proc.poll() is None, log.read_text()
        match = re.search(r"pgmbus serve on (http://127\.0\.0\.1:\d+)", log.read_text())
        return match.group(1) if match else None

    base = str(wait_for(address, "pgmbus serve to listen"))
    with httpx.Client(base_url=base, timeout=10, trust_env=False) as http:
        assert http.get("/healthz").status_code == 200
        metrics = http.get("/metrics")
        assert metrics.status_code == 200 and "pgmbus_" in metrics.text
        for page in ("/docs", "/"):
            html = http.get(page)
            assert html.status_code == 200 and "<html" in html.text.lower(), page
            # offline: every script and stylesheet the page loads comes from this server
            assets = re.findall(r"""(?:src|href)=["']([^"']+\.(?:js|css))["']""", html.text)
            assert assets, f"{page} loads no assets"
            for asset in assets:
                assert asset.startswith("/"), f"{page} loads {asset} from elsewhere"
                assert http.get(asset).status_code == 200, asset
    assert "Traceback" not in log.read_text()


# --- [django] ----------------------------------------------------------------------------------

DJANGO_SETTINGS = """
# pgmbus: the database of the test server, and the app
from psycopg.conninfo import conninfo_to_dict as _parse
_db = _parse({dsn!r})
DATABASES = {{"default": {{
    "ENGINE": "django.db.backends.postgresql", "NAME": _db["dbname"],
    "USER": _db.get("user", ""), "HOST": _db.get("host", ""), "PORT": _db.get("port", ""),
}}}}
INSTALLED_APPS += ["pgmbus.contrib.django"]
PGMBUS = {{"DATABASE": "default"}}
"""

DJANGO_POST = """
from django.db import connection, transaction
from pgmbus.contrib.django import bus, post
with connection.cursor() as cur:
    cur.execute("CREATE TABLE shipped (n int PRIMARY KEY)")
bus().create_queue("orders")
with transaction.atomic():
    post("orders", {"n": 1})                 # committed: delivered
try:
    with transaction.atomic():
        post("orders", {"n": 2})             # rolled back: never exists
        raise RuntimeError("roll back")
except RuntimeError:
    pass
print("posted")
"""

DJANGO_HANDLER = """
from django.db import connection


def ship(message):
    with connection.cursor() as cur:
        cur.execute("INSERT INTO shipped (n) VALUES (%s)", [message.data["n"]])
"""


def test_django_extra_migrates_posts_atomically_and_the_worker_consumes(
    wheel_env: WheelEnv,
    fresh_dsn: str,
    background: Callable[..., subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    wheel_env.need("django")
    wheel_env.run("django-admin", "startproject", "site_", str(tmp_path))
    settings = tmp_path / "site_" / "settings.py"
    settings.write_text(settings.read_text() + DJANGO_SETTINGS.format(dsn=fresh_dsn))
    (tmp_path / "shipping.py").write_text(DJANGO_HANDLER)

    def manage(*args: str) -> subprocess.CompletedProcess[str]:
        return wheel_env.run("python", "manage.py", *args, cwd=tmp_path)

    assert "Applying pgmbus.0001_install... OK" in manage("migrate").stdout
    assert "up to date" in wheel_env.run("pgmbus", "status", "--dsn", fresh_dsn).stdout
    assert "posted" in manage("shell", "-c", DJANGO_POST).stdout

    log = tmp_path / "worker.log"
    proc = background(
        "python",
        "manage.py",
        "pgmbus_worker",
        "shipping:ship",
        "--queue",
        "orders",
        "--poll",
        "0.2",
        log=log,
        cwd=tmp_path,
    )
    wait_for(lambda: rows(fresh_dsn, "SELECT n FROM shipped") == [(1,)], "the worker to ship")
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=30) == 0, log.read_text()
    assert rows(fresh_dsn, "SELECT n FROM shipped") == [(1,)]
    left = rows(fresh_dsn, "SELECT data FROM mbus.consume('orders')")
    assert left == [], f"the rolled-back post left {left}"


# --- [celery] ----------------------------------------------------------------------------------

CELERY_APP = """
import os

import psycopg
from celery import Celery

import pgmbus.contrib.kombu_transport  # registers the pgmbus:// scheme with Kombu
from pgmbus.contrib.kombu_transport import url_from_dsn

DSN = os.environ["PGMBUS_DSN"]
app = Celery("tasks", broker=url_from_dsn(DSN))
app.conf.update(broker_connection_retry_on_startup=True, worker_hijack_root_logger=False,
                broker_transport_options={"polling_interval": 0.2})


@app.task
def add(x, y):
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute("INSERT INTO sums (total) VALUES (%s)", [x + y])
"""


def test_celery_extra_runs_tasks_in_a_real_worker(
    wheel_env: WheelEnv,
    fresh_dsn: str,
    background: Callable[..., subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    wheel_env.need("celery")
    wheel_env.run("pgmbus", "install", "--dsn", fresh_dsn)
    sql(fresh_dsn, "CREATE TABLE sums (total int)")
    (tmp_path / "tasks.py").write_text(CELERY_APP)
    env = clean_env(PGMBUS_DSN=fresh_dsn)
    wheel_env.run(
        "python",
        "-c",
        "import tasks; tasks.add.delay(2, 3); tasks.add.delay(4, 5)",
        cwd=tmp_path,
        env=env,
    )
    log = tmp_path / "celery.log"
    proc = background(
        "celery",
        "-A",
        "tasks",
        "worker",
        "--pool",
        "threads",
        "-c",
        "1",
        "--loglevel",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        log=log,
        cwd=tmp_path,
        env=env,
    )
    wait_for(
        lambda: sorted(rows(fresh_dsn, "SELECT total FROM sums")) == [(5,), (9,)],
        "the Celery worker to run both tasks",
    )
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)
    assert "Traceback" not in log.read_text(), log.read_text()


# --- [spark] -----------------------------------------------------------------------------------

SPARK_READ = """
import os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable  # Spark's Python workers import pgmbus too
from pyspark.sql import SparkSession
import pgmbus.spark

spark = SparkSession.builder.getOrCreate()  # Spark's defaults
pgmbus.spark.register(spark)
events = spark.read.format("pgmbus").option("dsn", os.environ["PGMBUS_DSN"]).load()
print("keys", sorted(r.key for r in events.where("topic = 'orders.created'").collect()))
spark.stop()
"""


@pytest.mark.spark
def test_spark_extra_reads_the_log_on_a_default_session(
    wheel_env: WheelEnv, fresh_dsn: str, tmp_path: Path
) -> None:
    wheel_env.need("spark")
    wheel_env.run("pgmbus", "install", "--dsn", fresh_dsn)
    sql(
        fresh_dsn,
        "SELECT mbus.publish('orders.created', '{\"n\": 1}', 'a'),"
        " mbus.publish('orders.created', '{\"n\": 2}', 'b'),"
        " mbus.publish('orders.paid', '{\"n\": 1}', 'a')",
    )
    (tmp_path / "read.py").write_text(SPARK_READ)
    done = wheel_env.run(
        "python",
        str(tmp_path / "read.py"),
        cwd=tmp_path,
        timeout=300,
        env=clean_env(PGMBUS_DSN=fresh_dsn),
    )
    assert "keys ['a', 'b']" in done.stdout, done.stdout + done.stderr


def test_every_extra_brings_what_it_promises(wheel_env: WheelEnv) -> None:
    """Last: with every extra installed, their packages import (EXTRA_ONLY is not stale)."""
    for extra in ("server", "django", "celery", "spark"):
        wheel_env.need(extra)
    assert sorted(wheel_env.importable(EXTRA_ONLY)) == sorted(EXTRA_ONLY)
