"""Parsing and validation of the ``pgmbus`` data source options (no pyspark needed here)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass

from pgmbus.errors import ConfigurationError

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_TOPIC = re.compile(r"^[A-Za-z0-9_.:/-]+$")

READ_OPTIONS = frozenset(
    {
        "dsn",
        "topics",
        "group",
        "numpartitions",
        "maxeventspertrigger",
        "startingposition",
        "endingposition",
        "payloadschema",
        "publishedbefore",
        "subscriptionid",
        "placementhome",
    }
)
WRITE_OPTIONS = frozenset({"dsn", "topic", "queue", "sink", "placementhome"})
# Options Spark itself passes to every source or sink (lower case, as Spark gives them).
_SPARK_OPTIONS = frozenset({"path", "paths", "checkpointlocation", "queryname"})


@dataclass(frozen=True)
class ReadOptions:
    """What a read (batch or streaming) was asked for.

    ``starting_position`` is ``"beginning"``, ``"now"`` or a cursor (for a new group: also an
    ISO timestamp, passed to ``mbus.create_group``); ``ending_position`` (batch only) is
    ``"latest"`` or a cursor. ``published_before`` limits a read to older events (for a stream:
    the group stops before the first transaction that published at or after it).
    ``subscription_id`` reads the events sent directly to that subscription (publish's
    ``subscription_id``) instead of the events sent to none.
    """

    dsn: str
    topics: tuple[str, ...] | None
    group: str | None
    num_partitions: int
    max_events_per_trigger: int | None
    starting_position: str | None
    ending_position: str
    payload_schema: str | None
    published_before: dt.datetime | None = None
    subscription_id: int | None = None
    placement_home: str | None = None


@dataclass(frozen=True)
class WriteOptions:
    """Where a write goes: a stream topic (``topic``) or a queue (``queue``), never both.

    ``topic`` may be ``None`` when the rows carry a ``topic`` column. With
    ``placement_home`` the map on that database says where rows go (``dsn`` is the home until
    the driver resolves it; see :mod:`pgmbus.spark.placed`).
    """

    dsn: str
    topic: str | None
    queue: str | None
    sink: str
    placement_home: str | None = None


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def _unknown(given: dict[str, str], allowed: frozenset[str], kind: str) -> None:
    extra = sorted(set(given) - allowed - _SPARK_OPTIONS)
    if extra:
        raise ConfigurationError(
            f"unknown pgmbus {kind} option(s): {', '.join(extra)} "
            f"(known: {', '.join(sorted(allowed))})"
        )


def _dsn(given: dict[str, str]) -> str:
    dsn = given.get("dsn", "").strip()
    if not dsn:
        raise ConfigurationError(
            "the pgmbus data source needs the 'dsn' option (a PostgreSQL connection string)"
        )
    return dsn


def _positive_int(given: dict[str, str], key: str, label: str) -> int | None:
    raw = given.get(key)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"option {label} must be an integer, got {raw!r}") from None
    if value < 1:
        raise ConfigurationError(f"option {label} must be at least 1, got {value}")
    return value


def _timestamp(raw: str | None, label: str) -> dt.datetime | None:
    if raw is None or not raw.strip():
        return None
    try:
        value = dt.datetime.fromisoformat(raw.strip())
    except ValueError:
        raise ConfigurationError(f"option {label} must be an ISO timestamp, got {raw!r}") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def parse_topics(raw: str | None) -> tuple[str, ...] | None:
    """Split a comma-separated topic list; ``None`` or empty means every topic."""
    if raw is None:
        return None
    topics = tuple(t.strip() for t in raw.split(",") if t.strip())
    for t in topics:
        if not _TOPIC.match(t):
            raise ConfigurationError(f"invalid topic {t!r} in option topics")
    return topics or None


def _check_placed(given: dict[str, str], streaming: bool) -> None:
    """A read through the placement map: named topics, no cursor positions."""
    if "dsn" in given:
        raise ConfigurationError("give either option dsn or option placementHome, not both")
    if parse_topics(given.get("topics")) is None:
        raise ConfigurationError("option placementHome needs option topics (the placed topics)")
    for key, label in (
        ("startingposition", "startingPosition"),
        ("endingposition", "endingPosition"),
    ):
        if given.get(key, "latest").strip() not in ("beginning", "now", "latest"):
            raise ConfigurationError(
                f"option {label} with placementHome is beginning, now or latest (a cursor "
                "belongs to one server)"
            )


def parse_read(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """Validate reader options (keys are case-insensitive, as Spark's are)."""
    given = _lower(options)
    _unknown(given, READ_OPTIONS, "read")
    group = given.get("group") or None
    if group is not None and not _NAME.match(group):
        raise ConfigurationError(
            f"invalid group name {group!r}: use a-z, 0-9 and _, starting with a letter"
        )
    if group is not None and not streaming:
        raise ConfigurationError("option group is for spark.readStream only")
    max_events = _positive_int(given, "maxeventspertrigger", "maxEventsPerTrigger")
    if max_events is not None and not streaming:
        raise ConfigurationError("option maxEventsPerTrigger is for spark.readStream only")
    ending = given.get("endingposition") or "latest"
    if streaming and "endingposition" in given:
        raise ConfigurationError("option endingPosition is for batch reads only")
    home = given.get("placementhome", "").strip() or None
    if home is not None:
        _check_placed(given, streaming)
    return ReadOptions(
        dsn=home or _dsn(given),
        placement_home=home,
        topics=parse_topics(given.get("topics")),
        group=group,
        num_partitions=_positive_int(given, "numpartitions", "numPartitions") or 2,
        max_events_per_trigger=max_events,
        starting_position=given.get("startingposition") or None,
        ending_position=ending,
        payload_schema=given.get("payloadschema") or None,
        published_before=_timestamp(given.get("publishedbefore"), "publishedBefore"),
        subscription_id=_positive_int(given, "subscriptionid", "subscriptionId"),
    )


def parse_write(options: Mapping[str, str]) -> WriteOptions:
    """Validate writer options: exactly one of ``topic`` and ``queue`` (or a topic column)."""
    given = _lower(options)
    _unknown(given, WRITE_OPTIONS, "write")
    topic = given.get("topic") or None
    queue = given.get("queue") or None
    if topic is not None and queue is not None:
        raise ConfigurationError("give either option topic or option queue, not both")
    if topic is not None and not _TOPIC.match(topic):
        raise ConfigurationError(f"invalid topic {topic!r}")
    if queue is not None and not _NAME.match(queue):
        raise ConfigurationError(f"invalid queue name {queue!r}")
    sink = given.get("sink") or (f"queue:{queue}" if queue else f"topic:{topic or '*'}")
    home = given.get("placementhome", "").strip() or None
    if home is not None and "dsn" in given:
        raise ConfigurationError("give either option dsn or option placementHome, not both")
    return WriteOptions(
        dsn=home or _dsn(given), topic=topic, queue=queue, sink=sink, placement_home=home
    )
