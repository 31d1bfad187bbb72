"""One failover under load, in the default test run: queue producers (autocommit and
transactional, client iids), a transactional consumer, a lease worker and a stream group keep
running while the primary is killed (-9) and the synchronous standby is promoted."""

from __future__ import annotations

import time

import pytest

from pgmbus.testing.chaos import History, check
from tests.chaos.scenarios import (
    GROUP,
    LEASE_QUEUE,
    TOPIC,
    TX_QUEUE,
    _dead,
    _deliveries,
    _queue_depth,
    _setup,
    _stream_dead,
)
from tests.chaos.workloads import (
    LeaseQueueWorker,
    QueueProducer,
    StreamGroupWorker,
    StreamPublisher,
    TxQueueConsumer,
    Workload,
    wait_until,
)
from tests.ha.harness import HAChaosCluster

CAUGHT_UP = """
SELECT (SELECT count(*) FROM mbus.events WHERE topic = %s)
     = (SELECT count(DISTINCT value) FROM chaos_results WHERE workload = 'stream')
"""


def _stream_caught_up(dsn: str) -> bool:
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute(CAUGHT_UP, (TOPIC,)).fetchone()
    return bool(row and row[0])


@pytest.mark.timeout(120)
def test_one_failover_loses_no_acknowledged_message(ha_cluster: HAChaosCluster) -> None:
    dsn = ha_cluster.new_database()
    _setup(dsn)
    history = History()
    producers: list[Workload] = [
        QueueProducer(history, w, f"{w}-{n}", dsn, q, transactional=tx, max_ops=10_000, rate=40)
        for w, q in (("queue-tx", TX_QUEUE), ("queue-lease", LEASE_QUEUE))
        for n, tx in (("auto", False), ("tx", True))
    ]
    producers.append(StreamPublisher(history, "stream", "s0", dsn, TOPIC, max_ops=10_000, rate=40))
    lease = LeaseQueueWorker("queue-lease", dsn, LEASE_QUEUE)
    group = StreamGroupWorker("stream", dsn, GROUP)
    consumers: list[Workload] = [TxQueueConsumer("queue-tx", dsn, TX_QUEUE), lease, group]
    for w in consumers + producers:
        w.start()
    try:
        time.sleep(1.5)
        failover = ha_cluster.failover(rejoin=False)
        time.sleep(2.0)  # the load goes on against the new primary
    finally:
        for w in producers:
            w.stop()
    drained = wait_until(
        lambda: (
            _queue_depth(dsn, TX_QUEUE) == 0
            and _queue_depth(dsn, LEASE_QUEUE) == 0
            and _stream_caught_up(dsn)
        ),
        30,
    )
    time.sleep(0.5)  # acks in flight
    for w in consumers:
        w.stop()
    crashed = {w.name: w.crashed for w in consumers + producers if w.crashed}
    assert not crashed, crashed
    assert drained, "the consumers caught up on the new primary"
    assert failover.promoted != failover.killed
    assert failover.to_primary_s < 30, failover
    reports = [
        check(
            "queue-tx",
            history.ops(),
            _deliveries(dsn, "queue-tx"),
            dead=_dead(dsn, TX_QUEUE),
            exactly_once=True,
            idempotent_producer=True,
            fault="failover",
            faults_injected=1,
        ),
        check(
            "queue-lease",
            history.ops(),
            _deliveries(dsn, "queue-lease"),
            dead=_dead(dsn, LEASE_QUEUE),
            exactly_once=False,
            idempotent_producer=True,
            fault="failover",
            faults_injected=1,
        ),
        check(
            "stream",
            history.ops("stream"),
            _deliveries(dsn, "stream"),
            dead=_stream_dead(dsn, GROUP),
            exactly_once=True,
            ordered=True,
            fault="failover",
            faults_injected=1,
        ),
    ]
    for report in reports:
        assert report.acknowledged > 0, report
        assert report.valid, (report, report.examples)
    met = lease.stats
    # the worker met the failover: a lease that failed (reconnects), or an ack or a handling
    # cut by it (a pool that waits for the new primary hides the lease errors)
    assert met is not None and met.reconnects + met.unfinished + met.failed >= 1, met
    assert group.worker.stats.reconnects >= 1, "the stream group reconnected"
