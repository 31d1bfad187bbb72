"""`pgmbus status` and /metrics say which server is primary, what it asks of its standbys and
how far they trail; both work on the standby."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import httpx
import psycopg
import pytest
from prometheus_client import generate_latest
from typer.testing import CliRunner

from pgmbus.cli import app
from pgmbus.http.metrics import fetch_snapshot, registry_for
from tests.ha.harness import HAChaosCluster

runner = CliRunner()


def _dsns(ha_cluster: HAChaosCluster) -> tuple[str, str]:
    ha_cluster.heal()
    dsn = ha_cluster.new_database()
    name = str(psycopg.conninfo.conninfo_to_dict(dsn)["dbname"])
    primary = ha_cluster.ha.wait_for_primary()
    standby = next(n for n in ("node1", "node2") if n != primary)
    return ha_cluster.ha.node_dsn(primary, name), ha_cluster.ha.node_dsn(standby, name)


def _metrics(dsn: str) -> str:
    with psycopg.connect(dsn) as conn:
        snap = fetch_snapshot(conn, late_after_s=60, window_s=60)
    return generate_latest(registry_for(lambda _after: snap)).decode()


def test_status_and_metrics_show_the_replication_state(ha_cluster: HAChaosCluster) -> None:
    on_primary, on_standby = _dsns(ha_cluster)
    shown = runner.invoke(app, ["status", "--dsn", on_primary, "--json"])
    assert shown.exit_code == 0, shown.output
    state = json.loads(shown.output)["replication"]
    assert state["in_recovery"] is False
    assert state["synchronous_standby_names"].startswith("ANY 1")
    [standby] = state["standbys"]
    assert standby["state"] == "streaming" and standby["sync_state"] in ("sync", "quorum")
    text = runner.invoke(app, ["status", "--dsn", on_primary])
    assert "replication: primary; synchronous standbys: ANY 1" in text.output

    on_replica = runner.invoke(app, ["status", "--dsn", on_standby, "--json"])
    assert on_replica.exit_code == 0, on_replica.output
    assert json.loads(on_replica.output)["replication"]["in_recovery"] is True
    text = runner.invoke(app, ["status", "--dsn", on_standby])
    assert "replication: standby (read-only;" in text.output

    primary_metrics = _metrics(on_primary)
    assert "pgmbus_server_in_recovery 0.0" in primary_metrics
    assert "pgmbus_replication_synchronous_standbys 1.0" in primary_metrics
    assert "pgmbus_replication_replay_lag_seconds{" in primary_metrics
    standby_metrics = _metrics(on_standby)
    assert "pgmbus_server_in_recovery 1.0" in standby_metrics
    assert "pgmbus_standby_replay_delay_seconds" in standby_metrics
    assert "pgmbus_queue_" in standby_metrics or "pgmbus_timer_due" in standby_metrics


@pytest.mark.timeout(120)
def test_serve_on_a_standby_answers_metrics_and_health(ha_cluster: HAChaosCluster) -> None:
    """`pgmbus serve --no-dispatcher` on a standby's DSN: /metrics and /healthz answer."""
    _on_primary, on_standby = _dsns(ha_cluster)
    argv = [sys.executable, "-m", "pgmbus", "serve", "--dsn", on_standby, "--host", "127.0.0.1"]
    argv += ["--port", "0", "--no-dispatcher", "--metrics-public"]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base = ""
        for line in proc.stdout:
            found = re.search(r"http://127\.0\.0\.1:\d+", line)
            if found:
                base = found.group(0)
                break
        assert base, "serve printed its address"
        assert httpx.get(base + "/healthz", timeout=10).status_code == 200
        metrics = httpx.get(base + "/metrics", timeout=10)
        assert metrics.status_code == 200
        assert "pgmbus_up 1.0" in metrics.text
        assert "pgmbus_server_in_recovery 1.0" in metrics.text
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()
