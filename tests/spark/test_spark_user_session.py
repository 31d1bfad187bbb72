"""``pgmbus.spark.register`` on a session built with Spark's defaults (push-down off)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.spark.conftest import cursor_now, publish, read_sql

ROOT = Path(__file__).resolve().parents[2]


def test_register_makes_reads_work_on_a_session_with_spark_defaults(db_dsn: str) -> None:
    publish(db_dsn, "a", 4)
    publish(db_dsn, "b", 2)
    events = read_sql(db_dsn, "1:1:", cursor_now(db_dsn))
    expected_all = sorted(e[0] for e in events)
    expected = sorted(e[0] for e in events if e[1] == "a" and e[0] > 2)
    env = {
        **os.environ,
        # how the user's interpreter reaches Spark's workers and how the JVM starts, not the
        # session's options: the job's session keeps Spark's defaults
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_SUBMIT_ARGS": "--driver-java-options '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC'"
        " pyspark-shell",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
    }
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests/spark/user_session_job.py"), db_dsn],
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [line] = [x for x in done.stdout.splitlines() if x.startswith("REPORT ")]
    report = json.loads(line.removeprefix("REPORT "))
    assert report["before"] == "false"  # Spark's default: the failure this fixes
    assert report["pushed"] is True and report["after"] == "true"
    assert report["all"] == expected_all and len(expected_all) == 6
    assert report["filtered"] == expected and expected
    assert report["plain_pushed"] is False and report["plain_after"] == "false"
    assert report["plain_filtered"] == expected
