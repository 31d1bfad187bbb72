"""Sagas: the design document's tour (examples/tour_booking.py) driven to success and to a
rollback from a failure at each step, with real handlers run by worker threads.

Every test's docstring quotes the design document's statement it checks, translated into English.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tour_booking.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tour_booking", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tour_booking"] = module
    spec.loader.exec_module(module)
    return module


tour = load_example()
FORWARD = list(tour.STEPS)
COMPENSATED = [s for s, v in tour.STEPS.items() if v[2] is not None]


def test_tour_succeeds_and_rolls_back_from_each_step(db_dsn: str) -> None:
    """ "A saga is a long sequence of transactions that must in the end either be done entirely
    or rolled back entirely by applying, for each transaction done before, a compensating
    transaction ... In case of a failure of any of the four points all reservations made before
    must be cancelled"; "any consumer of the forward queue, when it finds a rollback is needed,
    takes the bung message with take(...), gets from it the full list of forward messages, which
    it also takes with take, then commits ... If taking the rollback message failed - no
    matter, some other handler did it already"."""
    tour.setup(db_dsn)
    cases: list[str | None] = [None, *FORWARD]
    with tour.workers(db_dsn):
        started = {case: tour.book(db_dsn, f"c-{case}", case) for case in cases}
        done = tour.wait_finished(db_dsn, [s for _t, s in started.values()])
    by_saga = {d.saga_id: d for d in done}
    with psycopg.connect(db_dsn, row_factory=dict_row) as conn:
        for case, (tour_id, saga_id) in started.items():
            st = by_saga[saga_id]
            log = conn.execute(
                "SELECT seq, action FROM tour_log WHERE tour_id = %s ORDER BY seq", (tour_id,)
            ).fetchall()
            actions = [r["action"] for r in log]
            row: dict[str, Any] | None = conn.execute(
                "SELECT room, ticket_to, ticket_from, transfer_to, transfer_from, approved "
                "FROM tour WHERE tour_id = %s",
                (tour_id,),
            ).fetchone()
            assert row is not None
            if case is None:
                assert st.state == "completed"
                assert sorted(actions) == sorted(FORWARD)
                assert all(v is not None for v in row.values())
                assert all(s["forward"] == "done" for s in st.steps.values())
                continue
            assert st.state == "compensated", (case, st)
            assert st.reason.startswith(case)
            # Every compensation ran exactly once, all after every forward step.
            for step in COMPENSATED:
                assert actions.count("cancel_" + step) == 1, (case, actions)
            forward_seqs = [r["seq"] for r in log if not r["action"].startswith("cancel_")]
            cancel_seqs = [r["seq"] for r in log if r["action"].startswith("cancel_")]
            assert max(forward_seqs, default=0) < min(cancel_seqs), (case, actions)
            # The failing step's work was undone with it; steps after it never ran.
            assert case not in actions
            after = {s for s, v in tour.STEPS.items() if case in v[1]}
            assert not after & set(actions), (case, actions)
            assert "approval" not in actions or case == "approval"
            assert all(v is None for v in row.values()), (case, row)
            assert all(s["compensation"] in (None, "done") for s in st.steps.values())
        leftovers = conn.execute("SELECT count(*) AS n FROM mbus.msg_wait").fetchone()
        assert leftovers == {"n": 0}
        for q in ("mbus_saga_bung", "mbus_saga_final", "mbus_saga_done"):
            assert conn.execute(f"SELECT count(*) AS n FROM mbus.q_{q}").fetchone() == {"n": 0}


def test_second_rollback_finds_nothing(db_dsn: str) -> None:
    """ "If taking the rollback message failed - no matter, some other handler already did
    it": a rollback returns false after another committed one, and one attempted while another
    transaction is rolling the same saga back fails at once (lock not available) instead of
    deadlocking with it."""
    tour.setup(db_dsn)
    _tour_id, saga_id = tour.book(db_dsn, "x")
    with (
        psycopg.connect(db_dsn, row_factory=dict_row) as first,
        psycopg.connect(db_dsn, row_factory=dict_row) as second,
    ):
        assert first.execute("SELECT mbus.saga_rollback(%s, 'a') AS ok", (saga_id,)).fetchone() == {
            "ok": True
        }
        with pytest.raises(psycopg.errors.LockNotAvailable):
            second.execute("SELECT mbus.saga_rollback(%s, 'b')", (saga_id,))
        second.rollback()
        first.commit()
        assert second.execute(
            "SELECT mbus.saga_rollback(%s, 'b') AS ok", (saga_id,)
        ).fetchone() == {"ok": False}
        second.commit()
        # The forward messages are gone; compensations are claimable now.
        ready = second.execute("SELECT count(*) AS n FROM mbus.q_tour_rooms").fetchone()
        assert ready == {"n": 0}
        got = second.execute("SELECT data FROM mbus.consume('tour_undo_rooms')").fetchall()
        assert [g["data"]["saga_id"] for g in got] == [saga_id]
        second.rollback()
        st = second.execute(
            "SELECT state, reason FROM mbus.sagas WHERE saga_id = %s", (saga_id,)
        ).fetchone()
        assert st == {"state": "compensating", "reason": "a"}
