"""Throughput and lag of the exchange between two servers: the mover, and logical replication.

Run ``python -m bench.exchange_measure`` (it starts two durable embedded clusters in temporary
folders and removes them). Mover: N messages queued on A, drained to B by ``Bridge`` per batch
size; then a steady producer on A with the mover running, lag = the time the message was posted
on B minus its enqueue_time on A. Logical replication: a publication of an outbox table on A
(wal_level=logical), a subscription on B whose table has a trigger ENABLE ALWAYS that hands each
row to mbus.exchange_receive and keeps nothing; same N and the same steady producer.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import psycopg.sql

from pgmbus import schema
from pgmbus.devdb import DevCluster
from pgmbus.exchange import Bridge

POST_MANY = (
    "SELECT mbus.post('orders', jsonb_build_object('n', n, 'pad', repeat('x', 60))) "
    "FROM generate_series(1, %s) AS n"
)
POST_ONE = "SELECT mbus.post('orders', jsonb_build_object('n', %s::int))"
COUNT_B = "SELECT count(*) FROM mbus.q_orders"
LAG_B = (
    "SELECT extract(epoch FROM q.added - (q.headers->>'enqueue_time')::timestamptz) "
    "FROM mbus.q_orders AS q"
)
CLEAR_B = "DELETE FROM mbus.q_orders"
LR_SOURCE = """
CREATE SCHEMA xlr;
CREATE TABLE xlr.outbox (iid text PRIMARY KEY, data jsonb NOT NULL, headers jsonb NOT NULL);
CREATE PUBLICATION xlr_pub FOR TABLE xlr.outbox WITH (publish = 'insert');
"""
LR_TARGET = """
CREATE SCHEMA xlr;
CREATE TABLE xlr.outbox (iid text PRIMARY KEY, data jsonb NOT NULL, headers jsonb NOT NULL);
CREATE FUNCTION xlr.receive() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM mbus.exchange_receive('orders', jsonb_build_array(jsonb_build_object(
        'iid', NEW.iid, 'data', NEW.data, 'headers', NEW.headers)));
    RETURN NULL;  -- the row itself is not kept
END;
$$;
CREATE TRIGGER receive BEFORE INSERT ON xlr.outbox FOR EACH ROW EXECUTE FUNCTION xlr.receive();
ALTER TABLE xlr.outbox ENABLE ALWAYS TRIGGER receive;
"""
LR_SUBSCRIBE = psycopg.sql.SQL("CREATE SUBSCRIPTION xlr_sub CONNECTION {} PUBLICATION xlr_pub")
LR_INSERT_MANY = (
    "INSERT INTO xlr.outbox SELECT 'o.' || (%s + n) || '@xa', "
    "jsonb_build_object('n', n, 'pad', repeat('x', 60)), "
    "jsonb_build_object('seenby', jsonb_build_array('xa'), 'source_db', 'xa', "
    "'enqueue_time', clock_timestamp()) FROM generate_series(1, %s) AS n"
)


T0 = time.perf_counter()


def _say(what: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f}s] {what}", file=sys.stderr, flush=True)


def _load() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def _cluster(letter: str) -> DevCluster:
    home = Path(tempfile.mkdtemp(prefix=f"pgmbus-xbench-{letter}-"))
    home.chmod(0o755)
    cluster = DevCluster(home)
    cluster.start()
    return cluster


def _db(cluster: DevCluster, name: str) -> str:
    with psycopg.connect(cluster.dsn("postgres"), autocommit=True) as admin:
        admin.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(name)))
    dsn = cluster.dsn(name)
    with psycopg.connect(dsn) as conn:
        schema.install(conn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue('orders', 1)")
    return dsn


def _wait_count(b: psycopg.Connection[Any], n: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while True:
        row = b.execute(COUNT_B).fetchone()
        if row and int(row[0]) >= n:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{row} of {n}")
        time.sleep(0.01)


def _lags(b: psycopg.Connection[Any]) -> dict[str, float]:
    lags = sorted(float(r[0]) for r in b.execute(LAG_B).fetchall())
    b.execute(CLEAR_B)
    return {
        "p50_ms": round(1000 * statistics.median(lags), 1),
        "p99_ms": round(1000 * lags[int(0.99 * (len(lags) - 1))], 1),
        "max_ms": round(1000 * lags[-1], 1),
    }


def _steady(post: Any, rate: float, seconds: float) -> tuple[int, float]:
    """Post at ``rate`` per second (one commit each); return the count and the rate reached."""
    n = int(rate * seconds)
    start = time.perf_counter()
    for i in range(n):
        pause = start + i / rate - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        post(i)
    return n, round(n / (time.perf_counter() - start))


def measure(n: int = 20_000, rate: float = 500.0, seconds: float = 10.0) -> dict[str, Any]:
    a_cluster, b_cluster = _cluster("a"), _cluster("b")
    out: dict[str, Any] = {}
    try:
        with psycopg.connect(a_cluster.dsn("postgres"), autocommit=True) as admin:
            admin.execute("ALTER SYSTEM SET wal_level = logical")
        a_cluster.stop()
        a_cluster.start()
        _say("clusters up")
        a_dsn, b_dsn = _db(a_cluster, "xa"), _db(b_cluster, "xb")
        _say("databases installed")
        with (
            psycopg.connect(a_dsn, autocommit=True) as a,
            psycopg.connect(b_dsn, autocommit=True) as b,
        ):
            a.execute("SELECT mbus.create_link('b', %s)", (b_dsn,))
            a.execute("SELECT mbus.create_route('to_b', 'b', 'orders', 'orders')")
            for batch in (100, 500, 2000):
                a.execute(POST_MANY, (n,))
                mover = Bridge(a_dsn, batch=batch)
                start = time.perf_counter()
                moved = mover.drain()
                elapsed = time.perf_counter() - start
                mover.close()
                b.execute(CLEAR_B)
                _say(f"drain batch {batch}: {moved} in {elapsed:.2f}s")
                out[f"mover_drain_batch_{batch}"] = {
                    "msg_per_s": round(moved / elapsed),
                    "load": _load(),
                }
            _say("steady mover")
            stop = threading.Event()
            mover = Bridge(a_dsn, batch=500, poll=1.0)
            thread = threading.Thread(target=mover.run, args=(stop,))
            thread.start()
            sent, reached = _steady(lambda i: a.execute(POST_ONE, (i,)), rate, seconds)
            _wait_count(b, sent)
            stop.set()
            thread.join()
            out["mover_lag_wakeups"] = {**_lags(b), "posted_per_s": reached, "load": _load()}
            _say("logical replication")
            a.execute(LR_SOURCE)
            b.execute(LR_TARGET)
            b.execute(LR_SUBSCRIBE.format(psycopg.sql.Literal(a_dsn)))
            time.sleep(2)  # the initial table sync of an empty table
            a.execute(LR_INSERT_MANY, (0, n))
            start = time.perf_counter()
            _wait_count(b, n)
            elapsed = time.perf_counter() - start
            b.execute(CLEAR_B)
            out["logical_one_transaction"] = {"msg_per_s": round(n / elapsed), "load": _load()}
            offset = n
            sent, reached = _steady(
                lambda i: a.execute(LR_INSERT_MANY, (offset + i, 1)), rate, seconds
            )
            _wait_count(b, sent)
            out["logical_lag"] = {**_lags(b), "posted_per_s": reached, "load": _load()}
            b.execute("DROP SUBSCRIPTION xlr_sub")
    finally:
        for cluster in (a_cluster, b_cluster):
            cluster.destroy()
            shutil.rmtree(cluster.home, ignore_errors=True)
    return out


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    print(json.dumps(measure(size), indent=2))
