"""Typed calls of the streams SQL API on a caller's connection (they join its transaction)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, LiteralString, NamedTuple

import psycopg
from psycopg.types.json import Jsonb

from pgmbus.errors import translate, translating
from pgmbus.sqlfiles import load_queries

Conn = psycopg.Connection[Any]


def _q(name: str) -> LiteralString:
    return load_queries("streams.sql")[name]


class Event(NamedTuple):
    """One event of the log as a reader receives it (a named tuple: cheap to build)."""

    id: int
    topic: str
    key: str | None
    payload: Any
    headers: dict[str, Any] | None
    published_at: datetime
    subscription_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Batch:
    """A group's next batch: its events and the cursor that acknowledges all of them."""

    group: str
    cursor: str | None
    events: list[Event] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.events)

    def __bool__(self) -> bool:
        return bool(self.events)


class RetryEvent(NamedTuple):
    """An event handed back by ``read_retries`` after a failed attempt."""

    id: int
    topic: str
    key: str | None
    payload: Any
    headers: dict[str, Any] | None
    published_at: datetime
    attempts: int
    last_error: str | None


def _json(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value)


def _one(conn: Conn, query: LiteralString, params: dict[str, Any]) -> Any:
    with translating():
        row = conn.execute(query, params).fetchone()
    return row[0] if row else None


def publish(
    conn: Conn,
    topic: str,
    payload: Any,
    *,
    key: str | None = None,
    headers: dict[str, Any] | None = None,
) -> int:
    """Publish one event in the connection's transaction; return its id.

    The event is readable exactly when the transaction commits; a rollback removes it.
    """
    # the hot path: positional parameters and no context manager (measurably cheaper)
    params = (topic, Jsonb(payload), key, None if headers is None else Jsonb(headers))
    try:
        row = conn.execute(_q("publish"), params).fetchone()
    except psycopg.Error as exc:
        raise translate(exc) from exc
    return int(row[0]) if row else 0


def publish_batch(
    conn: Conn,
    topic: str,
    payloads: Sequence[Any],
    *,
    keys: Sequence[str | None] | None = None,
    headers: Sequence[dict[str, Any] | None] | None = None,
) -> list[int]:
    """Publish several events of one topic with one statement; return their ids in order."""
    params = {
        "topic": topic,
        "payloads": [Jsonb(p) for p in payloads],
        "keys": list(keys) if keys is not None else None,
        "headers": [_json(h) for h in headers] if headers is not None else None,
    }
    with translating():
        rows = conn.execute(_q("publish_batch"), params).fetchall()
    return [int(r[0]) for r in rows]


def publish_many(
    conn: Conn,
    events: Iterable[tuple[str, str | None, Any, dict[str, Any] | None]],
) -> list[int]:
    """Publish many events with ``mbus.publish`` calls sent as one pipelined batch.

    ``events`` yields ``(topic, key, payload, headers)``; returns the ids in order.
    """
    params = [(t, Jsonb(p), k, _json(h)) for t, k, p, h in events]
    ids: list[int] = []
    with translating(), conn.cursor() as cur:
        cur.executemany(_q("publish"), params, returning=True)
        while True:
            row = cur.fetchone()
            if row is not None:
                ids.append(int(row[0]))
            if not cur.nextset():
                break
    return ids


def publish_copy(
    conn: Conn,
    events: Iterable[tuple[str, str | None, Any, dict[str, Any] | None]],
) -> int:
    """Publish many events, possibly of different topics, with ``COPY`` (the fastest path).

    ``events`` yields ``(topic, key, payload, headers)``. Returns the number of events.
    """
    n = 0
    with translating():
        conn.execute(_q("check_log"))
        with conn.cursor() as cur, cur.copy(_q("copy_events")) as copy:
            for topic, key, payload, hdrs in events:
                copy.write_row((topic, key, Jsonb(payload), _json(hdrs)))
                n += 1
        conn.execute(_q("notify"))
    return n


def create_group(conn: Conn, name: str, *, start: str = "now", slots: int = 1) -> None:
    """Create a consumer group at ``start`` ('beginning', 'now', a timestamp or an event id)."""
    _one(conn, _q("create_group"), {"name": name, "start": start, "slots": slots})


def drop_group(conn: Conn, name: str) -> None:
    """Drop a consumer group with its cursors, retries and dead letters."""
    _one(conn, _q("drop_group"), {"name": name})


def configure_group(
    conn: Conn,
    name: str,
    *,
    topics: Sequence[str] | None = None,
    on_busy: str | None = None,
    max_lag: timedelta | None = None,
    max_attempts: int | None = None,
    retry_backoff: timedelta | None = None,
    ordered: bool | None = None,
) -> None:
    """Change a group's options; ``None`` leaves an option as it is (``topics=[]``: all).

    ``ordered=True`` delivers transactions in transaction-id order (each only once every earlier
    transaction has ended), at the price of waiting for open transactions.
    """
    _one(
        conn,
        _q("configure_group"),
        {
            "name": name,
            "topics": list(topics) if topics is not None else None,
            "on_busy": on_busy,
            "max_lag": max_lag,
            "max_attempts": max_attempts,
            "retry_backoff": retry_backoff,
            "ordered": ordered,
        },
    )


def read_next(conn: Conn, group: str, *, max_events: int = 1000, slot: int | None = None) -> Batch:
    """Read the group's next batch without moving it; ``commit(batch.cursor)`` acknowledges it.

    The group's cursor row stays locked until the connection's transaction ends, so reading,
    writing results and committing in one transaction handles each event exactly once.
    """
    with translating():
        rows = conn.execute(
            _q("read_next"), {"group": group, "max_events": max_events, "slot": slot}
        ).fetchall()
    if not rows:
        return Batch(group, None, [])
    return Batch(group, rows[0][0], [Event(*r[1:]) for r in rows])


def read_subscriptions(
    conn: Conn, group: str, *, max_events: int = 1000, slot: int | None = None
) -> Batch:
    """Like ``read_next`` for a group of subscriptions: matching events with their subscriptions.

    Batches in which nothing matched are acknowledged by the call itself, in the connection's
    transaction, and reading goes on: an empty result means the group has caught up.
    """
    with translating():
        rows = conn.execute(
            _q("read_subscriptions"), {"group": group, "max_events": max_events, "slot": slot}
        ).fetchall()
    if not rows:
        return Batch(group, None, [])
    events = [Event(r[1], r[2], r[3], r[4], r[5], r[6], tuple(r[7])) for r in rows]
    return Batch(group, rows[0][0], events)


def commit(conn: Conn, group: str, cursor: str) -> None:
    """Move the group to ``cursor`` (from ``read_next``); in the connection's transaction."""
    _one(conn, _q("commit"), {"group": group, "cursor": cursor})


def commit_transaction(conn: Conn, group: str, cursor: str) -> None:
    """Move the group to ``cursor`` and commit the connection's transaction, in one round trip.

    The same as ``commit(conn, group, cursor)`` then ``conn.commit()``, pipelined.
    """
    with translating(), conn.pipeline():
        conn.execute(_q("commit"), {"group": group, "cursor": cursor})
        conn.commit()


def seek(conn: Conn, group: str, start: str) -> None:
    """Reposition a group: 'beginning', 'now', a timestamp or an event id (revives it)."""
    _one(conn, _q("seek"), {"group": group, "start": start})


def current_cursor(conn: Conn) -> str:
    """The position a reader would reach now (a snapshot, as text)."""
    return str(_one(conn, _q("current_cursor"), {}))


def group_cursor(conn: Conn, group: str, *, slot: int | None = None) -> str:
    """The group's committed position."""
    return str(_one(conn, _q("group_cursor"), {"group": group, "slot": slot}))


def read_between(
    conn: Conn,
    from_cursor: str,
    to_cursor: str,
    *,
    topics: Sequence[str] | None = None,
    slot: int | None = None,
    nslots: int | None = None,
) -> list[Event]:
    """The events consumed at ``to_cursor`` and not at ``from_cursor``, in id order."""
    with translating():
        rows = conn.execute(
            _q("read_between"),
            {
                "from_cursor": from_cursor,
                "to_cursor": to_cursor,
                "topics": list(topics) if topics is not None else None,
                "slot": slot,
                "nslots": nslots,
            },
        ).fetchall()
    return [Event(*r) for r in rows]


def retry_event(
    conn: Conn,
    group: str,
    event_id: int,
    *,
    error: str | None = None,
    delay: timedelta | None = None,
) -> str:
    """Count a failed attempt; return 'retry' (scheduled again) or 'dead' (dead-lettered)."""
    params = {"group": group, "event_id": event_id, "error": error, "delay": delay}
    return str(_one(conn, _q("retry_event"), params))


def read_retries(
    conn: Conn, group: str, *, max_events: int = 100, lease: timedelta = timedelta(minutes=1)
) -> list[RetryEvent]:
    """Claim the group's events whose retry is due (each hidden for ``lease``)."""
    with translating():
        rows = conn.execute(
            _q("read_retries"), {"group": group, "max_events": max_events, "lease": lease}
        ).fetchall()
    return [RetryEvent(*r) for r in rows]


def ack_retry(conn: Conn, group: str, event_id: int) -> None:
    """A retried event was handled."""
    _one(conn, _q("ack_retry"), {"group": group, "event_id": event_id})


def dead_letters(conn: Conn, group: str) -> list[dict[str, Any]]:
    """The group's dead letters, oldest first."""
    with translating(), conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return list(cur.execute(_q("dead_letters"), {"group": group}).fetchall())


def replay_dead_letter(conn: Conn, group: str, event_id: int) -> None:
    """Give a dead event a fresh set of attempts."""
    _one(conn, _q("replay_dead_letter"), {"group": group, "event_id": event_id})


def subscribe(
    conn: Conn,
    group: str,
    condition: str,
    params: dict[str, Any] | None = None,
    *,
    expires_after: timedelta | None = None,
) -> int:
    """The id of the group's (shared) subscription with this condition and params."""
    return int(
        _one(
            conn,
            _q("subscribe"),
            {
                "group": group,
                "condition": condition,
                "params": Jsonb(params or {}),
                "expires_after": expires_after,
            },
        )
    )


def touch_subscription(conn: Conn, subscription_id: int) -> None:
    """Keep an expiring subscription alive."""
    _one(conn, _q("touch_subscription"), {"id": subscription_id})


def unsubscribe(conn: Conn, subscription_id: int) -> None:
    """Remove a subscription."""
    _one(conn, _q("unsubscribe"), {"id": subscription_id})


def capture_table(
    conn: Conn, table: str, *, topic: str | None = None, columns: Sequence[str] | None = None
) -> None:
    """Publish the table's inserts, updates, deletes and truncates as events."""
    params = {"tbl": table, "topic": topic, "columns": list(columns) if columns else None}
    _one(conn, _q("capture_table"), params)


def stop_capture(conn: Conn, table: str) -> None:
    """Stop publishing the table's changes."""
    _one(conn, _q("stop_capture"), {"tbl": table})


def maintain(conn: Conn) -> dict[str, Any]:
    """Run the streams maintenance (partitions, retention, lagging groups, subscriptions)."""
    result: dict[str, Any] = _one(conn, _q("maintain"), {})
    return result


def repair_after_restore(conn: Conn) -> dict[str, int]:
    """Make a restored log consistent; return the events queued again per group."""
    with translating():
        rows = conn.execute(_q("repair_after_restore")).fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


def group_status(conn: Conn) -> list[dict[str, Any]]:
    """One row per group and slot: state, position, pending events, retries, dead letters."""
    with translating(), conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return list(cur.execute(_q("group_status")).fetchall())


def counters(conn: Conn) -> dict[str, int]:
    """The streams counters (for example ``groups_expired``, ``dead_letters``)."""
    with translating():
        rows = conn.execute(_q("counters")).fetchall()
    return {str(r[0]): int(r[1]) for r in rows}
