"""Filter push-down: the predicates on event columns that the database evaluates itself."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
)

_NEVER_NULL = frozenset({"id", "topic", "payload", "published_at"})


@dataclass(frozen=True)
class Pushed:
    """The pushed predicates, as SQL parameters (``None`` means no condition)."""

    keys: tuple[str, ...] | None = None
    topics: tuple[str, ...] | None = None
    id_min: int | None = None  # inclusive
    id_max: int | None = None  # inclusive
    time_ge: dt.datetime | None = None
    time_gt: dt.datetime | None = None
    time_le: dt.datetime | None = None
    time_lt: dt.datetime | None = None
    handled: tuple[str, ...] = field(default=())
    # not a Spark filter: the subscriptionId option (the events sent directly to it; None: the
    # events sent to no subscription)
    subscription_id: int | None = None

    def params(self) -> dict[str, Any]:
        """Named parameters of the read query."""
        return {
            "keys": list(self.keys) if self.keys is not None else None,
            "id_min": self.id_min,
            "id_max": self.id_max,
            "time_ge": self.time_ge,
            "time_gt": self.time_gt,
            "time_le": self.time_le,
            "time_lt": self.time_lt,
            "subscription": self.subscription_id,
        }


def _intersect(a: tuple[str, ...] | None, b: Iterable[Any]) -> tuple[str, ...]:
    values = tuple(sorted({str(v) for v in b if v is not None}))
    if a is None:
        return values
    return tuple(v for v in a if v in values)


def _max(a: int | None, b: int) -> int:
    return b if a is None else max(a, b)


def _min(a: int | None, b: int) -> int:
    return b if a is None else min(a, b)


def _later(a: dt.datetime | None, b: dt.datetime | None) -> dt.datetime | None:
    return b if a is None else a if b is None else max(a, b)


def _earlier(a: dt.datetime | None, b: dt.datetime | None) -> dt.datetime | None:
    return b if a is None else a if b is None else min(a, b)


def _aware(value: Any) -> dt.datetime | None:
    if not isinstance(value, dt.datetime):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def push(
    pushed: Pushed, filters: list[Filter], topics: tuple[str, ...] | None
) -> tuple[Pushed, Iterator[Filter]]:
    """Absorb what we can evaluate; return the new state and the filters Spark must keep.

    Conditions on ``id``, ``key`` and ``topic`` are evaluated exactly by the database and not
    returned. Conditions on ``published_at`` are applied by the database and also returned, so
    that Spark re-checks them (time zones and precision stay Spark's business).
    """
    remaining: list[Filter] = []
    state = replace(pushed, topics=topics)
    for f in filters:
        attribute: tuple[str, ...] = getattr(f, "attribute", ())
        column = attribute[0] if len(attribute) == 1 else None
        value = getattr(f, "value", None)
        if column in _NEVER_NULL and isinstance(f, IsNotNull):
            continue
        if column == "key" and isinstance(f, EqualTo) and isinstance(value, str):
            state = replace(state, keys=_intersect(state.keys, [value]))
        elif column == "key" and isinstance(f, In):
            state = replace(state, keys=_intersect(state.keys, f.value))
        elif column == "topic" and isinstance(f, EqualTo) and isinstance(value, str):
            state = replace(state, topics=_intersect(state.topics, [value]))
        elif column == "topic" and isinstance(f, In):
            state = replace(state, topics=_intersect(state.topics, f.value))
        elif column == "id" and isinstance(value, int) and not isinstance(value, bool):
            if isinstance(f, EqualTo):
                state = replace(state, id_min=_max(state.id_min, value))
                state = replace(state, id_max=_min(state.id_max, value))
            elif isinstance(f, GreaterThan):
                state = replace(state, id_min=_max(state.id_min, value + 1))
            elif isinstance(f, GreaterThanOrEqual):
                state = replace(state, id_min=_max(state.id_min, value))
            elif isinstance(f, LessThan):
                state = replace(state, id_max=_min(state.id_max, value - 1))
            elif isinstance(f, LessThanOrEqual):
                state = replace(state, id_max=_min(state.id_max, value))
            else:
                remaining.append(f)
        elif column == "published_at" and _aware(value) is not None:
            when = _aware(value)
            if isinstance(f, GreaterThan):
                state = replace(state, time_gt=_later(state.time_gt, when))
            elif isinstance(f, GreaterThanOrEqual):
                state = replace(state, time_ge=_later(state.time_ge, when))
            elif isinstance(f, LessThan):
                state = replace(state, time_lt=_earlier(state.time_lt, when))
            elif isinstance(f, LessThanOrEqual):
                state = replace(state, time_le=_earlier(state.time_le, when))
            remaining.append(f)
        else:
            remaining.append(f)
    return state, iter(remaining)
