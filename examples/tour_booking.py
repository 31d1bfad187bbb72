"""The saga of the original mbus API: book a tour (room, tickets, transfers, approval) with workers.

Run it against the embedded cluster (``pgmbus dev start``) or ``PGMBUS_DSN``::

    .venv/bin/python examples/tour_booking.py                 # every step succeeds
    .venv/bin/python examples/tour_booking.py --fail-at ticket_from   # that step fails

Each forward step has its own queue and handler (one worker thread per queue) that records its
booking in the ``tour`` table; each has a compensation queue and handler that cancels it. A
handler that fails starts the rollback in its own transaction (``mbus.saga_rollback``).
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql

from pgmbus import schema
from pgmbus.dsn import resolve_dsn
from pgmbus.queues.model import Message
from pgmbus.queues.saga import Saga, SagaStatus, Step, run_saga_pump, run_saga_worker, status

# step -> (queue, after, compensation queue, column of the tour table)
STEPS: dict[str, tuple[str, tuple[str, ...], str | None, str]] = {
    "room": ("tour_rooms", (), "tour_undo_rooms", "room"),
    "ticket_to": ("tour_tickets_to", ("room",), "tour_undo_tickets_to", "ticket_to"),
    "ticket_from": ("tour_tickets_from", ("room",), "tour_undo_tickets_from", "ticket_from"),
    "transfer_to": ("tour_transfer_to", ("ticket_to",), "tour_undo_transfer_to", "transfer_to"),
    "transfer_from": (
        "tour_transfer_from",
        ("ticket_from",),
        "tour_undo_transfer_from",
        "transfer_from",
    ),
    "approval": ("tour_approval", ("transfer_to", "transfer_from"), None, "approved"),
}

TOUR = Saga(
    "tour",
    [Step(name, q, after, comp) for name, (q, after, comp, _col) in STEPS.items()],
)

SETUP = """
CREATE TABLE IF NOT EXISTS tour (
    tour_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer text NOT NULL,
    fail_at text,
    saga_id bigint,
    room text, ticket_to text, ticket_from text, transfer_to text, transfer_from text,
    approved text
);
CREATE TABLE IF NOT EXISTS tour_log (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tour_id bigint NOT NULL,
    action text NOT NULL
);
"""


def setup(dsn: str) -> None:
    """Install the schema, the tour tables and the saga's queues."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        schema.install(conn)
        conn.execute(SETUP)
        for queue, _after, comp, _col in STEPS.values():
            for q in (queue, comp):
                if q is not None:
                    conn.execute("SELECT mbus.saga_queue(%s)", (q,))


def forward(step: str) -> Any:
    """The handler of a forward step: book it, or fail when the tour says so."""
    column = STEPS[step][3]

    def handle(conn: psycopg.Connection[Any], message: Message) -> None:
        tour_id = int(message.data["tour_id"])
        conn.execute("INSERT INTO tour_log (tour_id, action) VALUES (%s, %s)", (tour_id, step))
        if message.data.get("fail_at") == step:
            raise RuntimeError(f"{step}: the service said no")
        conn.execute(
            sql.SQL("UPDATE tour SET {} = %s WHERE tour_id = %s").format(sql.Identifier(column)),
            (f"{step}-{tour_id}", tour_id),
        )

    return handle


def compensate(step: str) -> Any:
    """The handler of a compensation: cancel the booking (nothing to do if never made)."""
    column = STEPS[step][3]

    def handle(conn: psycopg.Connection[Any], message: Message) -> None:
        tour_id = int(message.data["tour_id"])
        conn.execute(
            "INSERT INTO tour_log (tour_id, action) VALUES (%s, %s)", (tour_id, "cancel_" + step)
        )
        conn.execute(
            sql.SQL("UPDATE tour SET {} = NULL WHERE tour_id = %s").format(sql.Identifier(column)),
            (tour_id,),
        )

    return handle


@contextmanager
def workers(dsn: str) -> Iterator[None]:
    """Run one worker thread per queue of the saga and the saga pump while in the block."""
    stop = threading.Event()
    threads = [threading.Thread(target=run_saga_pump, args=(dsn, stop))]
    for step, (queue, _after, comp, _col) in STEPS.items():
        threads.append(
            threading.Thread(target=run_saga_worker, args=(dsn, queue, forward(step), stop))
        )
        if comp is not None:
            threads.append(
                threading.Thread(target=run_saga_worker, args=(dsn, comp, compensate(step), stop))
            )
    for t in threads:
        t.start()
    try:
        yield
    finally:
        stop.set()
        for t in threads:
            t.join()


def book(dsn: str, customer: str, fail_at: str | None = None) -> tuple[int, int]:
    """Insert a tour and start its saga in one transaction; returns (tour_id, saga_id)."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "INSERT INTO tour (customer, fail_at) VALUES (%s, %s) RETURNING tour_id",
            (customer, fail_at),
        ).fetchone()
        assert row is not None
        tour_id = int(row[0])
        saga_id = TOUR.start(conn, {"tour_id": tour_id, "fail_at": fail_at})
        conn.execute("UPDATE tour SET saga_id = %s WHERE tour_id = %s", (saga_id, tour_id))
    return tour_id, saga_id


def wait_finished(dsn: str, saga_ids: list[int], timeout: float = 60.0) -> list[SagaStatus]:
    """Wait until every saga is completed or compensated; returns their statuses."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            found = [status(conn, s) for s in saga_ids]
            if all(s.state in ("completed", "compensated") for s in found):
                return found
            if time.monotonic() > deadline:
                raise TimeoutError(f"sagas not finished: {[(s.saga_id, s.state) for s in found]}")
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fail-at", choices=sorted(STEPS), default=None)
    args = parser.parse_args()
    dsn = resolve_dsn()
    setup(dsn)
    with workers(dsn):
        tour_id, saga_id = book(dsn, "vasya", args.fail_at)
        (done,) = wait_finished(dsn, [saga_id])
    print(
        f"tour {tour_id}: saga {saga_id} {done.state}"
        + (f" ({done.reason})" if done.reason else "")
    )
    for step, states in done.steps.items():
        print(f"  {step:14} forward={states['forward']:9} compensation={states['compensation']}")
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT room, ticket_to, ticket_from, transfer_to, transfer_from, approved "
            "FROM tour WHERE tour_id = %s",
            (tour_id,),
        ).fetchone()
    print(f"  bookings: {row}")


if __name__ == "__main__":
    main()
