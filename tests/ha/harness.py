"""The chaos suite on a pg_auto_failover cluster: the scenarios of tests/chaos with a failover.

``HAChaosCluster`` stands where the chaos suite's single server stands: its databases live on
the primary and replicate to the standby, clients get the multi-host DSN (no proxy), and the
``failover`` faults ``kill -9`` the primary's postmaster and keeper, wait for the standby's
promotion, then bring the old primary back as the new standby; the ``postmaster-kill`` fault
kills the primary's postmaster only, its keeper living on. Each failover is timed.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgmbus import schema
from pgmbus.testing.ha import HACluster
from tests.chaos.harness import RESULTS_DDL, ChaosCluster, Periodic
from tests.chaos.scenarios import FAULTS, Fault
from tests.chaos.workloads import Workload


@dataclass
class Failover:
    """One failover: which node died, which took over, when, and how long each step took."""

    killed: str
    promoted: str  # the killed node itself when its keeper restarted it as the primary
    at: datetime  # the kill, on this machine's clock (the servers' clock too)
    to_primary_s: float  # kill -> the new primary accepts writes
    rejoined_s: float | None = None  # the old primary back as a streaming standby
    fault: str = "node"  # "node": postmaster and keeper; "postmaster": the server only


class HAChaosCluster(ChaosCluster):
    """A monitor and two nodes (synchronous or asynchronous standby) for the chaos scenarios."""

    def __init__(
        self, *, synchronous: bool = True, ephemeral: bool = False, fast: bool = True
    ) -> None:
        super().__init__()
        self.ha = HACluster(
            self.folder / "ha", synchronous=synchronous, fast=fast, ephemeral=ephemeral
        )
        self.failovers: list[Failover] = []
        self.mode = "sync" if synchronous else "async"

    def start(self) -> HAChaosCluster:
        self.ha.start()
        with psycopg.connect(self.ha.dsn("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.template)))
        with psycopg.connect(self.ha.dsn(self.template), autocommit=True) as conn:
            schema.install(conn)
            conn.execute(RESULTS_DDL)
        return self

    def stop(self) -> None:
        self.ha.destroy()
        shutil.rmtree(self.folder, ignore_errors=True)

    def new_database(self) -> str:
        name = f"chaos_{uuid.uuid4().hex[:10]}"
        query = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(self.template)
        )
        with psycopg.connect(self.ha.dsn("postgres"), autocommit=True) as conn:
            conn.execute(query)
            conn.execute("CHECKPOINT")
        return self.ha.dsn(name)

    def drop_database(self, dsn: str) -> None:
        name = str(conninfo_to_dict(dsn)["dbname"])
        query = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        with psycopg.connect(self.ha.dsn("postgres"), autocommit=True) as conn:
            conn.execute(query)

    def via_proxy(self, dsn: str, **options: str) -> str:
        """No proxy here: the multi-host DSN itself, with the scenario's server options."""
        if not options:
            return dsn
        return make_conninfo(dsn, options=" ".join(f"-c {k}={v}" for k, v in options.items()))

    def heal(self) -> None:
        """Both nodes running, a primary and a streaming standby."""
        for name in ("node1", "node2"):
            self.ha.restart_node(name)
        self.ha.wait_for_standby()

    def failover(self, *, rejoin: bool = True) -> Failover:
        """Kill the primary (postmaster and keeper, -9), wait for the standby's promotion, and
        when asked bring the old primary back as the standby (and wait until it streams)."""
        old = self.ha.wait_for_primary()
        at = datetime.now(UTC)
        started = time.monotonic()
        self.ha.kill_node(old)
        self.kills += 1
        new = self.ha.wait_for_primary(other_than=old, timeout=120)
        done = Failover(old, new, at, round(time.monotonic() - started, 2))
        self.failovers.append(done)
        if rejoin:
            started = time.monotonic()
            self.ha.restart_node(old)
            self.ha.wait_for_standby()
            done.rejoined_s = round(time.monotonic() - started, 2)
        return done

    def kill_primary_postmaster(self) -> Failover:
        """Kill the primary's postmaster (-9) and not its keeper; wait until a node takes
        writes (the same one restarted, or the standby promoted), then for a streaming standby."""
        old = self.ha.wait_for_primary()
        at = datetime.now(UTC)
        started = time.monotonic()
        self.ha.kill_postmaster(old)
        self.kills += 1
        # the dead server's socket refuses at once; wait for that before looking for a primary
        while self.ha.primary() == old and time.monotonic() - started < 10:
            time.sleep(0.05)
        new = self.ha.wait_for_primary(timeout=180)
        done = Failover(old, new, at, round(time.monotonic() - started, 2), fault="postmaster")
        self.failovers.append(done)
        started = time.monotonic()
        self.ha.wait_for_standby(timeout=300)
        done.rejoined_s = round(time.monotonic() - started, 2)
        return done


WORKING = """
SELECT (SELECT count(*) FROM chaos_results)
     + (SELECT count(*) FROM mbus.timer_callbacks WHERE status <> 'pending')
"""


def _working(dsn: str) -> bool:
    """Whether the scenario's consumers have delivered something (a result, a timer call)."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(WORKING).fetchone()
    return bool(row and row[0])


def _once_working(
    name: str, kill: Callable[[HAChaosCluster], Failover]
) -> Callable[[ChaosCluster, str, list[Workload]], list[Periodic]]:
    """One fault, once the clients deliver: processes start slowly on a loaded machine, and a
    gap measured from their first delivery after the fault would not span the fault."""

    def start(c: ChaosCluster, dsn: str, _w: list[Workload]) -> list[Periodic]:
        assert isinstance(c, HAChaosCluster)
        done: list[Failover] = []

        def once() -> int:
            if done:
                return 0
            deadline = time.monotonic() + 60
            while not _working(dsn) and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(1.0)  # a second of steady load before the fault
            done.append(kill(c))
            return 1

        p = Periodic(name, 0.5, once)
        p.start()
        return [p]

    return start


def _failovers(
    count: int, every: float
) -> Callable[[ChaosCluster, str, list[Workload]], list[Periodic]]:
    """``count`` failovers, ``every`` seconds apart; the old primary rejoins as the standby
    after each but the last (the scenario's heal brings the last one back)."""

    def start(c: ChaosCluster, _dsn: str, _w: list[Workload]) -> list[Periodic]:
        assert isinstance(c, HAChaosCluster)
        done: list[Failover] = []

        def once() -> int:
            if len(done) >= count:
                return 0
            done.append(c.failover(rejoin=len(done) + 1 < count))
            return 1

        p = Periodic(f"failover-x{count}", every, once)
        p.start()
        return [p]

    return start


# The failover faults join the chaos suite's table, so that run_scenario knows them by name.
HA_FAULTS = {
    "failover": Fault("failover", _failovers(1, 1.5)),
    "failover-twice": Fault("failover-twice", _failovers(2, 1.5)),
    # one fault each, once the clients work: the failover-time measurements
    "postmaster-kill": Fault(
        "postmaster-kill", _once_working("postmaster-kill", HAChaosCluster.kill_primary_postmaster)
    ),
    "node-kill": Fault("node-kill", _once_working("node-kill", lambda c: c.failover(rejoin=False))),
}
FAULTS.update(HA_FAULTS)
