"""The SQL under the data source: admission control cuts, staged writes, the ledger."""

from __future__ import annotations

import datetime as dt

import psycopg
import pytest

from pgmbus.errors import InvalidState
from pgmbus.spark.options import WriteOptions
from pgmbus.spark.reader import RangePartition, read_partition
from pgmbus.spark.writer import StagedWrite, commit_write, stage
from tests.spark.conftest import cursor_now, publish, read_sql


def _next(dsn: str, start: str, end: str, n: int | None, before: object = None) -> str:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT mbus.spark_next_cursor(%s, %s, %s, NULL, %s)", (start, end, n, before)
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_next_cursor_cuts_batches_of_at_most_n_and_covers_all(db_dsn: str) -> None:
    publish(db_dsn, "t", 25)
    publish(db_dsn, "t", 1, start=100)
    end = cursor_now(db_dsn)
    start = "1:1:"
    seen: list[int] = []
    sizes = []
    while True:
        nxt = _next(db_dsn, start, end, 10)
        if nxt == start:
            break
        batch = [r[0] for r in read_sql(db_dsn, start, nxt)]
        sizes.append(len(batch))
        seen += batch
        start = nxt
    assert sizes == [10, 10, 6]  # one transaction of 25 is split, the next one follows
    assert seen == [r[0] for r in read_sql(db_dsn, "1:1:", end)]
    assert _next(db_dsn, start, cursor_now(db_dsn), None) == start  # nothing new: no batch


def test_next_cursor_stops_at_the_horizon(db_dsn: str) -> None:
    publish(db_dsn, "t", 5)
    with psycopg.connect(db_dsn) as conn:
        cut = conn.execute("SELECT max(published_at) FROM mbus.events").fetchone()
    publish(db_dsn, "t", 5, start=10)
    assert cut is not None
    horizon = cut[0] + dt.timedelta(microseconds=1)
    nxt = _next(db_dsn, "1:1:", cursor_now(db_dsn), None, horizon)
    assert [r[0] for r in read_sql(db_dsn, "1:1:", nxt)] == [
        r[0] for r in read_sql(db_dsn, "1:1:", cursor_now(db_dsn))
    ][:5]
    assert _next(db_dsn, nxt, cursor_now(db_dsn), None, horizon) == nxt


def test_partitions_split_a_range_without_overlap(db_dsn: str) -> None:
    publish(db_dsn, "t", 50)
    end = cursor_now(db_dsn)
    parts = [
        [b.to_pylist() for b in read_partition(db_dsn, RangePartition("1:1:", end, i, 3))]
        for i in range(3)
    ]
    ids = [row["id"] for part in parts for batch in part for row in batch]
    assert sorted(ids) == [r[0] for r in read_sql(db_dsn, "1:1:", end)]
    assert all(part for part in parts)


def test_staged_write_publishes_reported_attempts_once(db_dsn: str) -> None:
    import pyarrow as pa

    options = WriteOptions(dsn=db_dsn, topic="out", queue=None, sink="topic:out")
    rows = pa.record_batch({"payload": ['{"a": 1}', '{"a": 2}'], "key": ["x", None]})
    # A crashed run of batch 7 staged rows, then the re-run stages them again.
    stage(options, "q:7", iter([rows]))
    rerun = stage(options, "q:7", iter([rows]))
    assert commit_write(options, "q", 7, [rerun, None]) == 2
    assert commit_write(options, "q", 7, [rerun]) == -1  # the driver replays its commit
    with psycopg.connect(db_dsn) as conn:
        events = conn.execute("SELECT key, payload FROM mbus.events ORDER BY id").fetchall()
        staged = conn.execute("SELECT count(*) FROM mbus.spark_staged").fetchone()
    assert events == [("x", {"a": 1}), (None, {"a": 2})]
    assert staged == (0,)


def test_commit_refuses_when_staged_rows_are_missing(db_dsn: str) -> None:
    options = WriteOptions(dsn=db_dsn, topic="out", queue=None, sink="topic:out")
    lost = StagedWrite("q:1", "000000-0-lost", 5)
    with pytest.raises(InvalidState, match="5"):
        commit_write(options, "q", 1, [lost])
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM mbus.spark_batches").fetchone() == (0,)


def test_micro_batch_read_uses_the_txid_index(db_dsn: str) -> None:
    from psycopg import sql

    with psycopg.connect(db_dsn) as conn:
        conn.execute(
            "INSERT INTO mbus.events (topic, payload) "
            "SELECT 't', jsonb_build_object('n', g) FROM generate_series(1, 20000) AS g"
        )
        conn.commit()
        conn.execute("ANALYZE mbus.events")
        conn.commit()
    start = cursor_now(db_dsn)
    publish(db_dsn, "t", 10)
    end = cursor_now(db_dsn)
    query = sql.SQL("EXPLAIN SELECT * FROM mbus.spark_read({}, {}, NULL, 0, 2)").format(
        sql.Literal(start), sql.Literal(end)
    )
    with psycopg.connect(db_dsn) as conn:
        plan = "\n".join(r[0] for r in conn.execute(query))
        rows = conn.execute("SELECT count(*) FROM mbus.spark_read(%s, %s)", (start, end)).fetchone()
    assert "Index" in plan and "txid" in plan
    assert "Seq Scan on events_0000001" not in plan, plan
    assert rows == (10,)


def _staged(dsn: str) -> dict[str, int]:
    """Rows written and not published, per write: staged (queues) or pending events (topics)."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT write_id, sum(n) FROM ("
            " SELECT write_id, count(*) AS n FROM mbus.spark_staged GROUP BY write_id"
            " UNION ALL SELECT p.write_id, count(*) FROM mbus.spark_pending AS p"
            " JOIN mbus.events AS e ON e.txid = p.txid GROUP BY p.write_id) AS u"
            " GROUP BY write_id"
        ).fetchall()
    return {str(w): int(n) for w, n in rows}


def _age_write(dsn: str, write_id: str, days: int) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "UPDATE mbus.spark_writes SET last_staged_at = last_staged_at - %s * interval '1 day'"
            " WHERE write_id = %s",
            (days, write_id),
        )


def test_maintain_drops_staged_rows_of_abandoned_writes_only(db_dsn: str) -> None:
    import pyarrow as pa

    options = WriteOptions(dsn=db_dsn, topic="out", queue=None, sink="topic:out")
    rows = pa.record_batch({"payload": ['{"a": 1}', '{"a": 2}']})
    abandoned = stage(options, "write-dead", iter([rows]))  # its driver died: no commit
    stage(options, "write-live", iter([rows]))
    _age_write(db_dsn, "write-dead", 2)
    with psycopg.connect(db_dsn) as conn:
        row = conn.execute("SELECT mbus.maintain()").fetchone()
    assert row is not None and row[0]["spark_staged_dropped"] == 2
    assert _staged(db_dsn) == {"write-live": 2}  # within spark.staged_ttl (1 day): kept
    # A driver that commits after all finds its rows gone and publishes nothing.
    with pytest.raises(InvalidState, match="staged rows"):
        commit_write(options, "write-dead", 0, [abandoned])
    assert read_sql(db_dsn, "1:1:", cursor_now(db_dsn)) == []  # write-live's are pending


def test_a_commit_drops_abandoned_staged_rows(db_dsn: str) -> None:
    import pyarrow as pa

    options = WriteOptions(dsn=db_dsn, topic="out", queue=None, sink="topic:out")
    rows = pa.record_batch({"payload": ['{"a": 1}']})
    stage(options, "q:3", iter([rows]))  # batch 3 of a query nobody restarts
    _age_write(db_dsn, "q:3", 2)
    other = stage(options, "write-other", iter([rows]))
    assert commit_write(options, "write-other", 0, [other]) == 1
    assert _staged(db_dsn) == {}
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM mbus.spark_writes").fetchone() == (0,)


def test_cleanup_leaves_a_write_alone_while_a_task_stages_into_it(db_dsn: str) -> None:
    import pyarrow as pa

    options = WriteOptions(dsn=db_dsn, topic="out", queue=None, sink="topic:out")
    stage(options, "write-slow", iter([pa.record_batch({"payload": ['{"a": 1}']})]))
    _age_write(db_dsn, "write-slow", 2)
    with psycopg.connect(db_dsn) as task:  # a task of the same write still staging
        task.execute("SELECT mbus.spark_lock_stage('write-slow')")
        with psycopg.connect(db_dsn) as conn:
            dropped = conn.execute("SELECT mbus.spark_clean_staged()").fetchone()
        assert dropped == (0,)
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT mbus.spark_clean_staged()").fetchone() == (1,)


def test_batch_read_parts_are_index_range_scans_without_sort(db_dsn: str) -> None:
    from psycopg import sql

    from pgmbus.sqlfiles import load_queries

    with psycopg.connect(db_dsn) as conn:
        conn.execute(
            "INSERT INTO mbus.events (topic, payload) "
            "SELECT 't', jsonb_build_object('n', g) FROM generate_series(1, 20000) AS g"
        )
        conn.commit()
        conn.execute("ANALYZE mbus.events")
        conn.commit()
        lo, hi = conn.execute("SELECT min(id), max(id) FROM mbus.events").fetchone() or (0, 0)
    params = {
        "from_cursor": "1:1:",
        "to_cursor": cursor_now(db_dsn),
        "topics": None,
        "slot": 0,
        "nslots": 1,
        "keys": None,
        "id_min": lo,
        "id_max": lo + (hi - lo) // 4,
        "key_slot": None,
        "key_nslots": None,
        "time_ge": None,
        "time_gt": None,
        "time_le": None,
        "time_lt": None,
        "subscription": None,
    }
    template = sql.SQL(load_queries("spark.sql")["read_range"])
    query = template.format(**{k: sql.Literal(v) for k, v in params.items()})
    with psycopg.connect(db_dsn) as conn:
        plan = "\n".join(r[0] for r in conn.execute(sql.SQL("EXPLAIN ") + query))
    assert "Index Scan" in plan and "Index Cond: ((id >=" in plan, plan
    assert "Sort" not in plan and "Function Scan" not in plan, plan


def test_stream_source_reads_a_slotted_group_one_partition_per_slot(db_dsn: str) -> None:
    from pyspark.sql.streaming.datasource import ReadMaxRows

    from pgmbus.spark.options import parse_read
    from pgmbus.spark.reader import PgmbusStreamReader

    with psycopg.connect(db_dsn) as conn:
        conn.execute("SELECT mbus.create_group('sharded', 'beginning', 3)")
    publish(db_dsn, "t", 10)
    with psycopg.connect(db_dsn) as conn:  # another consumer read slot 1 further
        conn.execute("SELECT mbus.commit('sharded', '1@' || mbus.current_cursor())")
        early = {
            r[0]
            for r in conn.execute("SELECT id FROM mbus.events WHERE mbus.key_slot(key, id, 3) = 1")
        }
    publish(db_dsn, "t", 30, start=10)
    options = parse_read({"dsn": db_dsn, "group": "sharded"}, streaming=True)
    reader = PgmbusStreamReader(options)
    start = reader.initialOffset()
    assert [c.split("@")[0] for c in start["slots"]] == ["0", "1", "2"]
    seen: list[int] = []
    batches = 0
    while True:
        end = reader.latestOffset(start, ReadMaxRows(10))
        if end == start:
            break
        batches += 1
        for part in reader.partitions(start, end):
            rows = [r for b in reader.read(part) for r in b.to_pylist()]
            assert len(rows) <= 10
            with psycopg.connect(db_dsn) as conn:
                slots = {
                    r[0]
                    for r in conn.execute(
                        "SELECT mbus.key_slot(k, i, 3) "
                        "FROM unnest(%s::text[], %s::int8[]) AS u(k, i)",
                        ([r["key"] for r in rows], [r["id"] for r in rows]),
                    )
                }
            assert slots <= {part.key_slot}  # a partition reads its slot's events only
            seen += [r["id"] for r in rows]
        reader.commit(end)
        start = end
    expected = [r[0] for r in read_sql(db_dsn, "1:1:", cursor_now(db_dsn)) if r[0] not in early]
    assert early and sorted(seen) == expected
    assert batches > 1
    with psycopg.connect(db_dsn) as conn:
        cursors = [
            conn.execute("SELECT mbus.group_cursor('sharded', %s)", (i,)).fetchone()
            for i in range(3)
        ]
    assert [c[0] for c in cursors if c] == start["slots"]  # every slot committed


def test_reads_keep_their_connection_and_survive_it_going_stale(db_dsn: str) -> None:
    from pgmbus.spark import connections

    publish(db_dsn, "t", 5)
    part = RangePartition("1:1:", cursor_now(db_dsn), 0, 1)
    expected = [r[0] for r in read_sql(db_dsn, "1:1:", part.end)]

    def ids() -> list[int]:
        return sorted(r["id"] for b in read_partition(db_dsn, part) for r in b.to_pylist())

    assert ids() == expected
    kept, reused = connections.take(db_dsn)
    assert reused  # the first read gave its connection back
    connections.give_back(db_dsn, kept)
    with psycopg.connect(db_dsn, autocommit=True) as conn:  # e.g. a server restart
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    assert ids() == expected  # the stale connection is replaced, the read succeeds


def _stage_rows(conn: psycopg.Connection[tuple[object, ...]], write_id: str, n: int) -> None:
    """What a task's staging transaction does, without Spark: the shared lock, then rows."""
    conn.execute("SELECT mbus.spark_lock_stage(%s)", (write_id,))
    conn.execute(
        "INSERT INTO mbus.spark_staged (write_id, token, seq, payload) "
        "SELECT %s, 'task-1', i, '{}' FROM generate_series(1, %s) AS i",
        (write_id, n),
    )


def test_an_abort_waits_for_a_task_still_staging_and_leaves_nothing(db_dsn: str) -> None:
    import threading

    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus.spark_begin_stage('w-abort')")
    with psycopg.connect(db_dsn) as task, psycopg.connect(db_dsn, autocommit=True) as driver:
        _stage_rows(task, "w-abort", 3)  # the task's transaction is still open
        done = threading.Event()

        def abort() -> None:
            driver.execute("SELECT mbus.spark_discard_write('w-abort')")
            done.set()

        worker = threading.Thread(target=abort)
        worker.start()
        waited = not done.wait(0.5)
        task.commit()
        worker.join(10)
    assert _staged(db_dsn) == {}  # the abort dropped the task's rows after they committed
    assert waited


def test_a_task_staging_after_an_abort_registers_its_write_again(db_dsn: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus.spark_begin_stage('w-late')")  # the task registered ...
        conn.execute("SELECT mbus.spark_discard_write('w-late')")  # ... Spark aborted ...
    with psycopg.connect(db_dsn) as task:  # ... and the task stages all the same
        _stage_rows(task, "w-late", 2)
        task.commit()
    assert _staged(db_dsn) == {"w-late": 2}
    future = dt.datetime.now(dt.UTC) + dt.timedelta(days=2)
    with psycopg.connect(db_dsn) as conn:
        row = conn.execute("SELECT mbus.spark_clean_staged(%s)", (future,)).fetchone()
    assert row == (2,)  # the cleanup sees the write, so nothing is left behind for ever
    assert _staged(db_dsn) == {}
