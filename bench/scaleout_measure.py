"""Aggregate throughput of one bus placed over 1, 2 and 3 servers, and each server's CPU cost.

Run ``python -m bench.scaleout_measure [--seconds S] [--queues Q]`` (it starts three durable
embedded clusters in temporary folders and removes them). The map lives on the first server;
Q queues are placed round-robin over the first k servers (k = 1, 2, 3) and one worker thread per
queue, connected to the DSN the :class:`pgmbus.scaleout.Cluster` gives for its queue, repeats
"post 100 messages in one statement, commit; consume 100 (mbus.consumen), commit" for S
seconds. Reported per k: messages through per second (all servers), and per server the CPU
seconds its processes used (postmaster and children, from /proc) per 10,000 messages it carried.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
from pgmbus.scaleout import Cluster

POST = (
    "SELECT count(mbus.post(%(queue)s, jsonb_build_object('n', n, 'pad', repeat('x', 60)))) "
    "FROM generate_series(1, %(batch)s) AS n"
)
TAKE = "SELECT count(*) FROM mbus.consumen(%(queue)s, 'default', %(batch)s)"
BATCH = 100
TICKS = os.sysconf("SC_CLK_TCK")


def _cluster(n: int) -> DevCluster:
    home = Path(tempfile.mkdtemp(prefix=f"pgmbus-scaleout-{n}-"))
    home.chmod(0o755)
    cluster = DevCluster(home)
    cluster.start()
    return cluster


def _db(cluster: DevCluster) -> str:
    with psycopg.connect(cluster.dsn("postgres"), autocommit=True) as admin:
        admin.execute(psycopg.sql.SQL("CREATE DATABASE bench_scaleout"))
    dsn = cluster.dsn("bench_scaleout")
    with psycopg.connect(dsn) as conn:
        schema.install(conn)
    return dsn


def _cpu(postmaster: int) -> float:
    """CPU seconds of a postmaster and its live children (user + system)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry.name), int(fields[1])
        if pid == postmaster or ppid == postmaster:
            total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def _worker(
    dsn: str, queue: str, until: float, counts: dict[str, int], gate: threading.Barrier
) -> None:
    with psycopg.connect(dsn) as conn:
        done = 0
        while time.monotonic() < until:
            conn.execute(POST, {"queue": queue, "batch": BATCH})
            conn.commit()
            row = conn.execute(TAKE, {"queue": queue, "batch": BATCH}).fetchone()
            conn.commit()
            done += int(row[0]) if row else 0
        counts[queue] = done
        gate.wait()  # finished: the CPU of this backend is read while it is alive
        gate.wait()


def run(k: int, home: str, names: list[str], pids: list[int], queues: int, seconds: float) -> Any:
    """One measurement with queues placed over the first ``k`` servers."""
    cluster = Cluster(home, refresh=60.0)
    servers = cluster.servers()
    placed: dict[str, str] = {}
    for i in range(queues):
        queue, server = f"k{k}_q{i}", names[i % k]
        with psycopg.connect(servers[server], autocommit=True) as conn:
            conn.execute("SELECT mbus.create_queue(%s, 1)", (queue,))
        cluster.place("queue", queue, [server])
        placed[queue] = server
    counts: dict[str, int] = {}
    before = [_cpu(pid) for pid in pids]
    until = time.monotonic() + seconds
    gate = threading.Barrier(len(placed) + 1, timeout=seconds + 120)
    threads = [
        threading.Thread(target=_worker, args=(cluster.dsn_for(q), q, until, counts, gate))
        for q in placed
    ]
    started = time.monotonic()
    for t in threads:
        t.start()
    gate.wait()
    elapsed = time.monotonic() - started
    cpu = [_cpu(pid) - b for pid, b in zip(pids, before, strict=True)]
    gate.wait()
    for t in threads:
        t.join()
    per_server = {n: sum(c for q, c in counts.items() if placed[q] == n) for n in names[:k]}
    return {
        "servers": k,
        "messages_per_s": round(sum(counts.values()) / elapsed),
        "per_server_messages_per_s": {n: round(c / elapsed) for n, c in per_server.items()},
        "cpu_s_per_10k_messages": {
            n: round(cpu[i] / per_server[n] * 10_000, 3)
            for i, n in enumerate(names[:k])
            if per_server[n]
        },
        "loadavg_after": Path("/proc/loadavg").read_text().split()[:3],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scaleout_measure", description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--queues", type=int, default=6)
    parser.add_argument("--servers", default="1,2,3")
    args = parser.parse_args(argv)
    ks = [int(k) for k in args.servers.split(",")]
    clusters = [_cluster(n) for n in range(max(ks))]
    try:
        dsns = [_db(c) for c in clusters]
        pids = [c.status().pid or 0 for c in clusters]
        names = [f"s{n + 1}" for n in range(len(clusters))]
        home = dsns[0]
        admin = Cluster(home, refresh=60.0)
        for name, dsn in zip(names, dsns, strict=True):
            admin.add_server(name, dsn)
        print(f"loadavg before: {Path('/proc/loadavg').read_text().strip()}", file=sys.stderr)
        results = [run(k, home, names, pids, args.queues, args.seconds) for k in ks]
        print(json.dumps(results, indent=2))
    finally:
        for c in clusters:
            c.destroy()
            shutil.rmtree(c.home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
