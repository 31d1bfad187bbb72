"""Restore detection: a log restored into another cluster is refused until it is repaired."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgmbus import streams
from pgmbus.devdb import DevCluster, find_bindir
from pgmbus.errors import LogInconsistent
from tests.streams.conftest import Connect, drain


@pytest.fixture(scope="module")
def epoch7_cluster() -> Iterator[DevCluster]:
    """A second cluster whose transaction ids are past 2^32 (xid epoch 7)."""
    home = Path(tempfile.mkdtemp(prefix="pgmbus-epoch7-"))
    home.chmod(0o755)
    cluster = DevCluster(home, ephemeral=True)
    cluster.start()
    cluster.stop()
    cluster._run([str(find_bindir() / "pg_resetwal"), "-e", "7", str(cluster.data_dir)])
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.destroy()
        shutil.rmtree(home, ignore_errors=True)


def _prepare_source(conn: psycopg.Connection[Any]) -> tuple[list[int], list[int]]:
    streams.create_group(conn, "done_half", start="beginning")
    streams.create_group(conn, "fresh", start="beginning")
    ids = streams.publish_batch(conn, "t", [{"i": i} for i in range(6)])
    consumed = [e.id for e in drain(conn, "done_half")]
    more = streams.publish_batch(conn, "t", [{"i": i} for i in range(6, 9)])
    return ids + more, consumed


def test_dump_restore_into_another_cluster_is_detected_and_repaired(
    connect: Connect, db_dsn: str, epoch7_cluster: DevCluster
) -> None:
    source = connect(autocommit=True)
    all_ids, consumed = _prepare_source(source)
    dump = Path(tempfile.mkdtemp()) / "db.dump"
    bindir = find_bindir()
    subprocess.run([str(bindir / "pg_dump"), "-Fc", "-f", str(dump), "-d", db_dsn], check=True)
    with psycopg.connect(epoch7_cluster.dsn("postgres"), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS restored")
        admin.execute("CREATE DATABASE restored")
    target_dsn = epoch7_cluster.dsn("restored")
    subprocess.run(
        [str(bindir / "pg_restore"), "--no-owner", "-d", target_dsn, str(dump)], check=True
    )
    shutil.rmtree(dump.parent, ignore_errors=True)
    with psycopg.connect(target_dsn, autocommit=True) as conn:
        with pytest.raises(LogInconsistent, match="another cluster") as info:
            streams.read_next(conn, "fresh")
        assert "repair-after-restore" in str(info.value)
        with pytest.raises(LogInconsistent):
            streams.publish(conn, "t", {"new": True})
        with pytest.raises(psycopg.Error, match="another cluster"):
            conn.execute("SELECT mbus.maintain()")
        assert conn.execute("SELECT consistent FROM mbus.log_status()").fetchone() == (False,)
        redelivered = streams.repair_after_restore(conn)
        assert redelivered == {"done_half": len(all_ids) - len(consumed), "fresh": len(all_ids)}
        assert [r.id for r in streams.read_retries(conn, "fresh", limit=100)] == all_ids
        half = [r.id for r in streams.read_retries(conn, "done_half", limit=100)]
        assert half == [i for i in all_ids if i not in consumed]
        assert drain(conn, "fresh") == []  # the old events are not delivered a second time
        new = streams.publish(conn, "t", {"after": "repair"})
        batch = streams.read_next(conn, "fresh")
        assert [e.id for e in batch.events] == [new]
        # offsets carry 64-bit transaction ids: they are strings past 2^32 here
        assert batch.cursor is not None
        xmax = int(batch.cursor.split(":")[1])
        assert xmax > 7 * 2**32
        streams.commit(conn, "fresh", batch.cursor)
        assert streams.read_between(conn, "1:1:", streams.current_cursor(conn))[-1].id == new
    with psycopg.connect(epoch7_cluster.dsn("postgres"), autocommit=True) as admin:
        admin.execute("DROP DATABASE restored WITH (FORCE)")


def test_changed_cluster_identity_is_refused_in_new_sessions(db_dsn: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        streams.create_group(conn, "g", start="beginning")
        conn.execute("CREATE TABLE t (id int PRIMARY KEY)")
        streams.capture_table(conn, "t")
        conn.execute("UPDATE mbus.stream_state SET system_identifier = 42")
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        with pytest.raises(LogInconsistent):
            streams.current_cursor(conn)
        with pytest.raises(psycopg.Error, match="another cluster"):
            conn.execute("INSERT INTO t VALUES (1)")  # captured writes refuse too
        streams.repair_after_restore(conn)
        conn.execute("INSERT INTO t VALUES (1)")
        assert [e.key for e in drain(conn, "g")] == ["1"]
