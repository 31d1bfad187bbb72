"""A Spark streaming query into a table sink under faults (``make chaos`` only: Spark is slow
to start). One Spark session for the module."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.harness import ChaosCluster
from tests.chaos.scenarios import run_scenario
from tests.chaos.summary import record_and_check

pytest.importorskip("pyspark")

DURATION = float(os.environ.get("CHAOS_DURATION_S", "10"))

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.spark]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pgmbus.spark.session import local_session

    session = local_session("pgmbus-chaos", master="local[2]", fast_start=True)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fault", ["kill-9", "proxy-cuts"])
def test_spark_query_into_a_table_sink_under_fault(
    chaos_cluster: ChaosCluster, spark: Any, fault: str
) -> None:
    """Every acknowledged event lands in the sink table exactly once, though micro-batches
    fail (the query is restarted from its checkpoint)."""
    outcome = run_scenario(
        chaos_cluster,
        "spark",
        fault,
        duration=DURATION,
        rate=30.0,
        drain_timeout=120.0,
        spark=spark,
    )
    record_and_check(outcome)
    assert outcome.reports[0].faults_injected > 0


# -- the pgmbus sink itself (writeStream.format("pgmbus")) across kill -9 of the server ------
#
# Its staging tables (mbus.spark_staged, mbus.spark_writes) are unlogged: crash recovery empties
# them. Exactly once still holds if a micro-batch whose staged rows were lost is refused at its
# commit and re-run, and a batch Spark recorded as committed is in the database.

SOURCE = "sparkha_src"
EVENTS = 1000


def _publish(dsn: str, n: int) -> list[int]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        conn.execute(
            "SELECT mbus.publish(%s, jsonb_build_object('n', g), 'k' || (g %% 5)) "
            "FROM generate_series(1, %s) AS g",
            (SOURCE, n),
        )
        conn.commit()
        rows = conn.execute(
            "SELECT id FROM mbus.events WHERE topic = %s ORDER BY id", (SOURCE,)
        ).fetchall()
    return [int(r[0]) for r in rows]


def _ledger_rows(dsn: str, sink: str) -> int:
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=3) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(row_count), 0) FROM mbus.spark_batches WHERE sink = %s",
                (sink,),
            ).fetchone()
    except psycopg.OperationalError:
        return -1  # the server is down or recovering
    return int(row[0]) if row else 0


def _in_flight(dsn: str) -> int:
    """Rows staged or task attempts pending, not yet committed."""
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=3) as conn:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM mbus.spark_staged) "
                "+ (SELECT count(*) FROM mbus.spark_pending)"
            ).fetchone()
    except psycopg.OperationalError:
        return 0
    return int(row[0]) if row else 0


def _committed_batches(checkpoint: Path) -> list[int]:
    """The micro-batches Spark recorded as committed (its checkpoint's commit log)."""
    folder = checkpoint / "commits"
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


@pytest.mark.timeout(420)
@pytest.mark.parametrize("kind", ["queue", "topic"])
def test_spark_sink_exactly_once_across_kill_9(
    chaos_cluster: ChaosCluster, spark: Any, kind: str, tmp_path: Path
) -> None:
    """Every source event lands in the target once though the server is killed -9 under the
    streaming query (restarted from its checkpoint after each failure, as a supervisor
    would), and every batch in Spark's commit log has its ledger row."""
    import threading
    import time

    import psycopg
    from pyspark.sql import functions as F

    from tests.spark.conftest import cursor_now

    dsn = chaos_cluster.new_database()
    target = f"sparkha_{kind}"
    sink = f"{kind}:{target}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        if kind == "queue":
            conn.execute("SELECT mbus.create_queue(%s)", (target,))
    start = cursor_now(dsn)
    ids = _publish(dsn, EVENTS)
    checkpoint = tmp_path / "ckpt"

    def run_query() -> Any:
        events = (
            spark.readStream.format("pgmbus")
            .option("dsn", dsn)
            .option("group", "sparkha")
            .option("topics", SOURCE)
            .option("startingPosition", "beginning")
            .option("maxEventsPerTrigger", "100")
            .load()
        )
        rows = events.select("key", F.to_json(F.struct("id")).alias("payload"))
        return (
            rows.writeStream.format("pgmbus")
            .option("dsn", dsn)
            .option(kind, target)
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="200 milliseconds")
            .start()
        )

    kills: list[float] = []
    stop = threading.Event()

    def killer() -> None:
        # kill while a micro-batch's rows sit staged (queue) or pending (topic), not yet
        # committed: the window where the unlogged staging tables matter
        while len(kills) < 3 and not stop.wait(0.05):
            if _in_flight(dsn) > 0:
                chaos_cluster.kill9_and_restart()
                kills.append(time.monotonic())
                stop.wait(2.0)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    errors: list[str] = []
    deadline = time.monotonic() + 300
    try:
        while _ledger_rows(dsn, sink) < EVENTS:
            assert time.monotonic() < deadline, f"not caught up; errors: {errors[-3:]}"
            query = run_query()
            try:
                while _ledger_rows(dsn, sink) < EVENTS and not query.awaitTermination(0.5):
                    pass
            except Exception as exc:  # a failed micro-batch ends the query: restart it
                errors.append(f"{type(exc).__name__}: {str(exc)[:300]}")
                time.sleep(0.5)
            finally:
                if query.isActive:
                    query.stop()
    finally:
        stop.set()
        thread.join(60)
    assert kills, "the server was killed under the query"

    with psycopg.connect(dsn) as conn:
        if kind == "queue":
            got = conn.execute(
                "SELECT (data->>'id')::bigint FROM mbus.consumen(%s, 'default', %s)",
                (target, EVENTS * 2),
            ).fetchall()
        else:
            got = conn.execute(
                "SELECT (payload->>'id')::bigint FROM mbus.read_between(%s, mbus.current_cursor(),"
                " ARRAY[%s])",
                (start, target),
            ).fetchall()
        ledger = {
            int(r[0])
            for r in conn.execute(
                "SELECT batch_id FROM mbus.spark_batches WHERE sink = %s", (sink,)
            ).fetchall()
        }
        leftovers = conn.execute(
            "SELECT (SELECT count(*) FROM mbus.spark_staged), "
            "(SELECT count(*) FROM mbus.spark_pending)"
        ).fetchone()
    values = sorted(int(r[0]) for r in got)
    assert len(values) == len(set(values)), "no event twice"
    assert values == ids, f"every event once: {len(set(ids) - set(values))} missing"
    assert set(_committed_batches(checkpoint)) <= ledger, "a batch Spark committed is stored"
    assert leftovers == (0, 0), "nothing staged or pending is left behind"
    print(f"{kind}: {len(kills)} kills, {len(errors)} query restarts: {errors}")
