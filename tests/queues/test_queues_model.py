"""Hypothesis state machines: the SQL queues against small in-memory models of them.

QueueMachine: posts (with and without delay, matching a selective consumer or not),
transactional claims, lease claims, acks and nacks run against both with the clock passed as
``p_now``; every claim must return exactly the deliveries the model says, in the model's order.

BusMachine: the whole bus in a database of its own: queues and consumers made and dropped
(colliding names included), selectors that raise, triggers, posts with and without iids
(duplicates included), claims, leases, acks, nacks, takes, rolled-back transactions and
temporary queues of other sessions. Every committed post is delivered once per matching
consumer or is in the dmq.
"""

from __future__ import annotations

import time
from collections import Counter
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
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from psycopg import sql
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


# --- the whole bus: catalog changes, iids, triggers, selectors that raise, temporary queues ------

QNAMES = ("qa", "qb", "qa_by_x")
CNAMES = ("x", "y", "x_by_y")  # qa + x_by_y and qa_by_x + y would share consume_qa_by_x_by_y
SELECTORS: dict[str | None, str | None] = {
    None: None,
    "even": "(t.data->>'n')::int % 2 = 0",
    "bad": "1 / ((t.data->>'n')::int % 3) = 1",  # raises for n % 3 = 0
}
QUEUE_FUNCTIONS = (
    "post",
    "postn",
    "peek",
    "deps",
    "clear_queue",
    "take",
    "ack",
    "nack",
    "extend",
    "bury",
)
CONSUMER_FUNCTIONS = ("consume", "consumen", "lease", "take_from")


def verdict(kind: str | None, n: int) -> str:
    """What a consumer's selector says of message n: 'yes', 'no' or 'raises'."""
    if kind is None:
        return "yes"
    if kind == "even":
        return "yes" if n % 2 == 0 else "no"
    return "raises" if n % 3 == 0 else ("yes" if n % 3 == 1 else "no")


def names(q: str, c: str | None = None) -> set[str]:
    """The function and relation names the bus makes (a model of mbus.generated_names)."""
    if c is not None:
        return {f"{f}_{q}_by_{c}" for f in CONSUMER_FUNCTIONS}
    rels = {f"q_{q}", *(f"q_{q}_{p}" for p in ("claim", "id", "iid", "expires"))}
    rels |= {
        f"q_{q}{p}${n}"
        for p in ("", "_claim", "_id", "_iid", "_lease", "_expires")
        for n in range(4)
    }
    return {f"{f}_{q}" for f in QUEUE_FUNCTIONS} | rels


@dataclass
class Msg:
    n: int
    vt: int  # model ticks: claim order is (vt, n)
    iid: str | None  # known for direct posts
    token: UUID | None = None


@dataclass
class QueueState:
    consumers: dict[str, str | None]
    triggers: set[str]


def make_bus_machine(pg_server: Any) -> type[RuleBasedStateMachine]:
    class BusMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.db = pg_server.create_database()
            self.dsn = pg_server.dsn(self.db)
            self.conn: psycopg.Connection[dict[str, Any]] = psycopg.connect(
                self.dsn, autocommit=True, row_factory=dict_row
            )
            self.static = {
                r["proname"]
                for r in self.conn.execute(
                    "SELECT proname FROM pg_proc WHERE pronamespace = 'mbus'::regnamespace"
                )
            } | {
                r["relname"]
                for r in self.conn.execute(
                    "SELECT relname FROM pg_class WHERE relnamespace = 'mbus'::regnamespace"
                )
            }
            self.queues: dict[str, QueueState] = {}
            self.pending: dict[tuple[str, str], list[Msg]] = {}
            self.dead: Counter[tuple[str, str, int]] = Counter()
            self.sessions: list[tuple[psycopg.Connection[dict[str, Any]], list[str]]] = []
            self.n = 0
            # client iids posted (committed) per queue: the server remembers them for
            # queues.iid_window (24 h), consumed or taken or not, and a post of one is a no-op
            self.posted_iids: set[tuple[str, str]] = set()
            self.tick = 0

        # -- helpers
        def call(self, query: Any, *args: Any) -> tuple[list[dict[str, Any]], str | None]:
            try:
                return self.conn.execute(query, args).fetchall(), None
            except psycopg.Error as exc:
                assert exc.sqlstate is not None and exc.sqlstate.startswith("MB"), exc
                return [], exc.sqlstate

        def taken(self) -> set[str]:
            out = set()
            for q, st_ in self.queues.items():
                out |= names(q) | {n for c in st_.consumers for n in names(q, c)}
            return out

        def clash(self, q: str, c: str | None) -> bool:
            new = names(q, c) if c else names(q) | names(q, "default")
            return bool(new & (self.taken() | (self.static - self.taken())))

        def holds(self, q: str, n: int, iid: str | None) -> bool:
            return any(
                m.n == n or (iid is not None and m.iid == iid)
                for (q2, _), ms in self.pending.items()
                if q2 == q
                for m in ms
            )

        def plan_post(self, q: str, n: int, iid: str | None, out: list[Any]) -> str | None:
            """The deliveries a post makes (into out), or the error it raises."""
            st_ = self.queues[q]
            if not st_.consumers and not st_.triggers:
                return "MB008"
            for c, kind in st_.consumers.items():
                v = verdict(kind, n)
                if v == "yes":
                    out.append(("deliver", q, c))
                elif v == "raises":
                    out.append(("dead", q, c))
            for dst in sorted(st_.triggers):
                err = self.plan_post(dst, n, None, out)
                if err:
                    return err
            return None

        def drop_queue_model(self, q: str) -> None:
            del self.queues[q]
            self.posted_iids = {x for x in self.posted_iids if x[0] != q}  # forgotten
            for key in [k for k in self.pending if k[0] == q]:
                del self.pending[key]
            for st_ in self.queues.values():
                st_.triggers.discard(q)

        # -- catalog
        @initialize()
        def two_queues(self) -> None:
            """qa with consumer x (even n), qb with consumer y (raises for n % 3 = 0)."""
            for q, c, kind in (("qa", "x", "even"), ("qb", "y", "bad")):
                self.create_queue(q)
                self.create_consumer(q, c, kind)

        @rule(q=st.sampled_from(QNAMES))
        def create_queue(self, q: str) -> None:
            _, err = self.call("SELECT mbus.create_queue(%s, 1)", q)
            if q in self.queues:
                assert err is None
                return
            expected = "MB003" if self.clash(q, None) else None
            assert err == expected, (q, err)
            if err is None:
                self.queues[q] = QueueState({"default": None}, set())
                self.pending[(q, "default")] = []

        @precondition(lambda self: self.queues)
        @rule(data=st.data())
        def drop_queue(self, data: st.DataObject) -> None:
            if not self.queues:
                return
            q = data.draw(st.sampled_from(sorted(self.queues)))
            _, err = self.call("SELECT mbus.drop_queue(%s)", q)
            assert err is None
            self.drop_queue_model(q)

        @rule(
            q=st.sampled_from(QNAMES),
            c=st.sampled_from(CNAMES),
            kind=st.sampled_from(sorted(SELECTORS, key=str)),
        )
        def create_consumer(self, q: str, c: str, kind: str | None) -> None:
            _, err = self.call("SELECT mbus.create_consumer(%s, %s, %s)", q, c, SELECTORS[kind])
            if q not in self.queues:
                assert err == "MB002"
            elif any(c in s.consumers for s in self.queues.values()) or self.clash(q, c):
                assert err == "MB003"
            else:
                assert err is None, err
                self.queues[q].consumers[c] = kind
                self.pending[(q, c)] = []

        @precondition(lambda self: self.pending)
        @rule(data=st.data())
        def drop_consumer(self, data: st.DataObject) -> None:
            pairs = sorted((q, c) for q, s in self.queues.items() for c in s.consumers)
            if not pairs:
                return
            q, c = data.draw(st.sampled_from(pairs))
            _, err = self.call("SELECT mbus.drop_consumer(%s, %s)", q, c)
            fed = any(q in s.triggers for s in self.queues.values())
            if fed and len(self.queues[q].consumers) == 1:
                assert err == "MB008"  # a trigger's posts would fail: nothing changes
                return
            assert err is None
            del self.queues[q].consumers[c]
            del self.pending[(q, c)]

        @rule(src=st.sampled_from(QNAMES), dst=st.sampled_from(QNAMES))
        def create_trigger(self, src: str, dst: str) -> None:
            _, err = self.call("SELECT mbus.create_trigger(%s, %s)", src, dst)
            if src not in self.queues or dst not in self.queues:
                assert err == "MB002"
                return
            reach, todo = set(), [dst]
            while todo:
                x = todo.pop()
                if x not in reach:
                    reach.add(x)
                    todo.extend(self.queues[x].triggers)
            if src == dst or src in reach:
                assert err == "MB006"
            elif dst in self.queues[src].triggers:
                assert err == "MB003"
            else:
                assert err is None, err
                self.queues[src].triggers.add(dst)

        # -- messages
        @precondition(lambda self: self.queues)
        @rule(data=st.data(), iid=st.sampled_from([None, None, "k1", "k2"]), rollback=st.booleans())
        def post(self, data: st.DataObject, iid: str | None, rollback: bool) -> None:
            if not self.queues:
                _, err = self.call("SELECT mbus.post('qa', '{}')")
                assert err == "MB002"
                return
            q = data.draw(st.sampled_from(sorted(self.queues)))
            self.n += 1
            self.tick += 1
            n = self.n
            plan: list[Any] = []
            expected_err = self.plan_post(q, n, iid, plan)
            duplicate = iid is not None and ((q, iid) in self.posted_iids or self.holds(q, -1, iid))
            query = sql.SQL("SELECT mbus.{}(%s, iid => %s) AS iid").format(
                sql.Identifier(f"post_{q}")
            )
            if rollback:
                self.conn.execute("BEGIN")
            rows, err = self.call(query, Jsonb({"n": n}), iid)
            if rollback:
                self.conn.execute("ROLLBACK")
            if duplicate:
                assert err is None and rows == [{"iid": iid}]
                return
            assert err == expected_err, (q, err, expected_err)
            if err or rollback:
                return
            got_iid = rows[0]["iid"]
            assert iid is None or got_iid == iid
            if iid is not None:
                self.posted_iids.add((q, iid))
            for what, q2, c in plan:
                if what == "deliver":
                    known = got_iid if q2 == q else None
                    self.pending[(q2, c)].append(Msg(n, self.tick, known))
                else:
                    self.dead[(q2, c, n)] += 1

        def ready(self, q: str, c: str) -> list[Msg]:
            return sorted(
                (m for m in self.pending[(q, c)] if m.token is None), key=lambda m: (m.vt, m.n)
            )

        @precondition(lambda self: self.pending)
        @rule(data=st.data(), amount=st.integers(0, 3), rollback=st.booleans())
        def consume(self, data: st.DataObject, amount: int, rollback: bool) -> None:
            if not self.pending:
                return
            q, c = data.draw(st.sampled_from(sorted(self.pending)))
            if rollback:
                self.conn.execute("BEGIN")
            rows, err = self.call("SELECT data FROM mbus.consumen(%s, %s, %s)", q, c, amount)
            if rollback:
                self.conn.execute("ROLLBACK")
            assert err is None
            expected = self.ready(q, c)[:amount]
            assert [r["data"]["n"] for r in rows] == [m.n for m in expected]
            if not rollback:
                for m in expected:
                    self.pending[(q, c)].remove(m)

        @precondition(lambda self: self.pending)
        @rule(data=st.data())
        def lease(self, data: st.DataObject) -> None:
            if not self.pending:
                return
            q, c = data.draw(st.sampled_from(sorted(self.pending)))
            rows, err = self.call(
                "SELECT data, lease_token FROM mbus.consume_lease(%s, %s, 1, '1 hour')", q, c
            )
            assert err is None
            expected = self.ready(q, c)[:1]
            assert [r["data"]["n"] for r in rows] == [m.n for m in expected]
            if expected:
                expected[0].token = rows[0]["lease_token"]

        @precondition(lambda self: any(m.token for ms in self.pending.values() for m in ms))
        @rule(data=st.data(), ack=st.booleans())
        def finish(self, data: st.DataObject, ack: bool) -> None:
            held = sorted(
                ((q, c, m.n) for (q, c), ms in self.pending.items() for m in ms if m.token),
                key=str,
            )
            if not held:
                return
            q, c, n = data.draw(st.sampled_from(held))
            m = next(x for x in self.pending[(q, c)] if x.n == n)
            query = "SELECT mbus.ack(%s, %s)" if ack else "SELECT mbus.nack(%s, %s)"
            _, err = self.call(query, q, m.token)
            assert err is None
            self.tick += 1
            if ack:
                self.pending[(q, c)].remove(m)
            else:
                m.token, m.vt = None, self.tick

        @precondition(lambda self: any(m.iid for ms in self.pending.values() for m in ms))
        @rule(data=st.data())
        def take(self, data: st.DataObject) -> None:
            known = sorted(
                {(q, m.iid, m.n) for (q, _), ms in self.pending.items() for m in ms if m.iid},
                key=str,
            )
            if not known:
                return
            q, iid, n = data.draw(st.sampled_from(known))
            query = sql.SQL("SELECT data FROM mbus.{}(%s)").format(sql.Identifier(f"take_{q}"))
            rows, err = self.call(query, iid)
            assert err is None
            assert [r["data"]["n"] for r in rows] == [n]
            for (q2, c), ms in self.pending.items():
                if q2 == q:
                    self.pending[(q2, c)] = [m for m in ms if m.n != n]

        # -- temporary queues of other sessions
        @precondition(lambda self: len(self.sessions) < 2)
        @rule()
        def open_session_with_temporary_queue(self) -> None:
            other = psycopg.connect(self.dsn, autocommit=True, row_factory=dict_row)
            row = other.execute("SELECT mbus.create_temporary_queue() AS q").fetchone()
            assert row is not None and row["q"] not in self.queues
            self.queues[row["q"]] = QueueState({"default": None}, set())
            self.pending[(row["q"], "default")] = []
            self.sessions.append((other, [row["q"]]))

        @precondition(lambda self: self.sessions)
        @rule(data=st.data())
        def end_session(self, data: st.DataObject) -> None:
            if not self.sessions:
                return
            i = data.draw(st.integers(0, len(self.sessions) - 1))
            other, temps = self.sessions.pop(i)
            pid = other.info.backend_pid
            other.close()
            for _ in range(200):
                row = self.conn.execute(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE pid = %s", (pid,)
                ).fetchone()
                if row is not None and row["n"] == 0:
                    break
                time.sleep(0.01)
            self.conn.execute("SELECT mbus.clear_tempq()")
            for q in temps:
                if q in self.queues:
                    self.drop_queue_model(q)
            assert not {
                r["qname"] for r in self.conn.execute("SELECT qname FROM mbus.queue")
            } & set(temps)

        @invariant()
        def dead_messages_match(self) -> None:
            rows = self.conn.execute(
                "SELECT qname, cname, (data->>'n')::int AS n, count(*) AS k FROM mbus.dmq "
                "GROUP BY 1, 2, 3"
            ).fetchall()
            assert Counter({(r["qname"], r["cname"], r["n"]): r["k"] for r in rows}) == self.dead

        def teardown(self) -> None:
            try:
                # every committed post is still pending exactly as the model says (or was
                # delivered once already, or is in the dmq: checked at each step)
                for (q, c), ms in sorted(self.pending.items()):
                    for m in ms:
                        if m.token is not None:
                            self.conn.execute("SELECT mbus.nack(%s, %s)", (q, m.token))
                            m.token = None
                    rows = self.conn.execute(
                        "SELECT data FROM mbus.consumen(%s, %s, 1000)", (q, c)
                    ).fetchall()
                    assert sorted(r["data"]["n"] for r in rows) == sorted(m.n for m in ms)
            finally:
                for other, _ in self.sessions:
                    other.close()
                self.conn.close()
                pg_server.drop_database(self.db)

    return BusMachine


@pytest.mark.slow
def test_bus_matches_model(pg_server: Any) -> None:
    """Catalog changes, posts with and without iids (duplicates too), selectors that raise,
    triggers, claims, leases, takes, rollbacks and temporary queues of other sessions: every
    committed post is delivered once per matching consumer or is in the dmq, as the model says."""
    run_state_machine_as_test(
        make_bus_machine(pg_server),
        settings=settings(
            max_examples=8,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
