"""Spark runs distributed: the data source and the jobs on a standalone cluster.

A master and two workers started from the installed pyspark (``spark-class``), bound to
127.0.0.1, a driver process on ``spark://``: write, read, stream and the jobs, exactly once,
checked against SQL. The full run takes about a minute (``make cluster``, ``make chaos``); the
default suite keeps the fast check that a master starts and stops by pid.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from pgmbus.spark.jobs.stats import StatsJob
from tests.spark.standalone import _alive, standalone_cluster

ROWS = 1200
_ROOT = Path(__file__).resolve().parents[2]


def test_master_starts_on_loopback_and_stops_by_pid() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with standalone_cluster(Path(tmp), workers=0) as cluster:
            pids = cluster.pids
            assert cluster.url.startswith("spark://127.0.0.1:")
            assert all(_alive(pid) for pid in pids)
        assert not any(_alive(pid) for pid in pids)


@pytest.mark.chaos
@pytest.mark.timeout(600)
def test_source_sink_and_jobs_run_on_a_standalone_cluster_exactly_once(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        conn.execute(
            "CREATE TABLE commits (id bigserial PRIMARY KEY, branch_id int NOT NULL DEFAULT 0,"
            " created_by text NOT NULL, object_id bigint NOT NULL)"
        )
    StatsJob(db_dsn, table="public.commits", checkpoint="unused").capture()
    with psycopg.connect(db_dsn) as conn:
        conn.execute(
            "INSERT INTO commits (created_by, object_id)"
            " SELECT 'user' || (g % 3), g % 5 FROM generate_series(1, 30) AS g"
        )
    workdir = Path(tempfile.mkdtemp(prefix="pgmbus-cluster-"))
    src = [str(_ROOT / "src"), str(_ROOT)]
    with standalone_cluster(workdir, workers=2, pythonpath=src) as cluster:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(src),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
        }
        done = subprocess.run(
            [
                sys.executable,
                str(Path(__file__).with_name("cluster_driver.py")),
                cluster.url,
                db_dsn,
                str(workdir),
                str(ROWS),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=540,
            check=False,
        )
        started = cluster.pids
        executors = cluster.executors()
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert not any(_alive(pid) for pid in [*started, *executors])

    assert result["master"] == cluster.url
    # the tasks ran in executors (two of them, one per worker), not in the driver
    assert len(result["task_parent_pids"]) == 2
    assert result["driver_pid"] not in result["task_parent_pids"]
    with psycopg.connect(db_dsn) as conn:
        out = conn.execute(
            "SELECT id, (payload->>'n')::int FROM mbus.events WHERE topic = 'cluster.out'"
            " ORDER BY id"
        ).fetchall()
        copy = conn.execute(
            "SELECT (payload->>'n')::int FROM mbus.events WHERE topic = 'cluster.copy'"
        ).fetchall()
        total = conn.execute("SELECT count(*) FROM mbus.events").fetchone()
        pending = conn.execute("SELECT count(*) FROM mbus.spark_pending").fetchone()
        users = conn.execute(
            "SELECT user_name, edits FROM mbus.stats_user_edits ORDER BY 1"
        ).fetchall()
    # written exactly once, read back exactly, streamed exactly once in several batches
    assert sorted(n for _, n in out) == list(range(ROWS))
    assert result["read_ids"] == [i for i, _ in out]
    assert sorted(n for (n,) in copy) == list(range(ROWS))
    assert result["stream_batches"] >= 3
    assert pending == (0,)
    # the jobs: every event archived once (the capture's 30 edits too), the stats exact
    assert total is not None
    assert result["archived"] == result["archive_read"] == total[0]
    assert result["stats_rows"] == 30
    assert users == [("user0", 10), ("user1", 10), ("user2", 10)]
