"""A hypothesis state machine: the SQL queue against a small in-memory model of it.

Posts (with and without delay, matching a selective consumer or not), transactional claims,
lease claims, acks and nacks run against both with the clock passed as ``p_now``; every claim
must return exactly the deliveries the model says, in the model's order.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    rule,
    run_state_machine_as_test,
)
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

CONSUMERS = ("default", "sel")
LEASE = 5.0


@dataclass
class Delivery:
    id: int
    vt: float  # model seconds; immediate posts sort first, by id (their real post time order)
    token: UUID | None = None
    attempts: int = 0


def make_machine(dsn: str) -> type[RuleBasedStateMachine]:
    class QueueMachine(RuleBasedStateMachine):
        leases = Bundle("leases")

        def __init__(self) -> None:
            super().__init__()
            self.conn: psycopg.Connection[dict[str, Any]] = psycopg.connect(
                dsn, row_factory=dict_row
            )
            self.conn.execute("SELECT mbus.create_queue('model', 1)")
            self.conn.execute("SELECT mbus.create_consumer('model', 'sel', $$t.data->>'k' = 'a'$$)")
            row = self.conn.execute("SELECT clock_timestamp() + interval '1 day' AS t").fetchone()
            assert row is not None
            self.t0: datetime = row["t"]
            self.now = 0.0
            self.model: dict[str, dict[int, Delivery]] = {c: {} for c in CONSUMERS}

        def at(self, seconds: float) -> datetime:
            return self.t0 + timedelta(seconds=seconds)

        def ready(self, consumer: str) -> list[Delivery]:
            return sorted(
                (d for d in self.model[consumer].values() if d.vt <= self.now),
                key=lambda d: (d.vt, d.id),
            )

        @rule(k=st.sampled_from(["a", "b"]), delay=st.sampled_from([None, 3.0, 12.0]))
        def post(self, k: str, delay: float | None) -> None:
            when = None if delay is None else self.at(self.now + delay)
            row = self.conn.execute(
                "SELECT mbus.post_model(%s, delayed_until => %s) AS iid", (Jsonb({"k": k}), when)
            ).fetchone()
            assert row is not None
            got = self.conn.execute(
                "SELECT id FROM mbus.q_model ORDER BY id DESC LIMIT 1"
            ).fetchone()
            assert got is not None
            msg_id = got["id"]
            vt = -1e12 + msg_id if delay is None else self.now + delay
            for consumer in CONSUMERS:
                if consumer == "default" or k == "a":
                    self.model[consumer][msg_id] = Delivery(msg_id, vt)

        @rule(seconds=st.sampled_from([1.0, 4.0, 10.0]))
        def tick(self, seconds: float) -> None:
            self.now += seconds

        @rule(consumer=st.sampled_from(CONSUMERS), amount=st.integers(0, 3))
        def consume(self, consumer: str, amount: int) -> None:
            rows = self.conn.execute(
                "SELECT id FROM mbus.consumen('model', %s, %s, %s)",
                (consumer, amount, self.at(self.now)),
            ).fetchall()
            expected = [d.id for d in self.ready(consumer)[:amount]]
            assert [r["id"] for r in rows] == expected
            for msg_id in expected:
                del self.model[consumer][msg_id]

        @rule(target=leases, consumer=st.sampled_from(CONSUMERS))
        def lease(self, consumer: str) -> Any:
            rows = self.conn.execute(
                "SELECT id, attempts, lease_token FROM mbus.consume_lease('model', %s, 1, %s,"
                " NULL, %s)",
                (consumer, timedelta(seconds=LEASE), self.at(self.now)),
            ).fetchall()
            expected = self.ready(consumer)[:1]
            assert [r["id"] for r in rows] == [d.id for d in expected]
            if not rows:
                return (consumer, None)
            d = expected[0]
            d.vt, d.token, d.attempts = self.now + LEASE, rows[0]["lease_token"], d.attempts + 1
            assert rows[0]["attempts"] == d.attempts
            return (consumer, d.token)

        @rule(held=consumes(leases), nack=st.booleans())
        def finish(self, held: tuple[str, UUID | None], nack: bool) -> None:
            consumer, token = held
            if token is None:
                return
            d = next((x for x in self.model[consumer].values() if x.token == token), None)
            live = d is not None and d.vt > self.now
            self.conn.execute("SAVEPOINT f")
            try:
                if nack:
                    self.conn.execute(
                        "SELECT mbus.nack('model', %s, '2 seconds', %s)", (token, self.at(self.now))
                    )
                else:
                    self.conn.execute(
                        "SELECT mbus.ack('model', %s, %s)", (token, self.at(self.now))
                    )
            except psycopg.Error as exc:
                self.conn.execute("ROLLBACK TO SAVEPOINT f")
                assert exc.sqlstate == "MB007" and not live
                return
            assert live and d is not None
            if nack:
                d.vt, d.token = self.now + 2.0, None
            else:
                del self.model[consumer][d.id]

        def teardown(self) -> None:
            self.conn.rollback()
            self.conn.close()

    return QueueMachine


@pytest.mark.slow
def test_queue_matches_model(shared_dsn: str) -> None:
    """Claims, leases, acks and nacks return exactly what a model queue says, in its order."""
    machine = make_machine(shared_dsn)
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=30,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
