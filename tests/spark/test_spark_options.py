"""Options of the pgmbus data source: names, defaults and the errors users see."""

from __future__ import annotations

import pytest

from pgmbus.errors import ConfigurationError
from pgmbus.spark.options import parse_read, parse_topics, parse_write


def test_read_options_are_case_insensitive_with_defaults() -> None:
    opts = parse_read(
        {"DSN": "dbname=x", "Topics": "a, b.c ,", "numPartitions": "4"}, streaming=False
    )
    assert opts.dsn == "dbname=x"
    assert opts.topics == ("a", "b.c")
    assert opts.num_partitions == 4
    assert opts.group is None
    assert opts.ending_position == "latest"


def test_stream_options() -> None:
    opts = parse_read(
        {
            "dsn": "dbname=x",
            "group": "spark_g1",
            "maxEventsPerTrigger": "500",
            "startingPosition": "beginning",
        },
        streaming=True,
    )
    assert opts.group == "spark_g1"
    assert opts.max_events_per_trigger == 500
    assert opts.starting_position == "beginning"
    assert opts.num_partitions == 2


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({}, False, "needs the 'dsn' option"),
        ({"dsn": "x", "numPartitions": "0"}, False, "at least 1"),
        ({"dsn": "x", "numPartitions": "two"}, False, "must be an integer"),
        ({"dsn": "x", "group": "Bad-Name"}, True, "invalid group name"),
        ({"dsn": "x", "group": "g"}, False, "readStream only"),
        ({"dsn": "x", "maxEventsPerTrigger": "5"}, False, "readStream only"),
        ({"dsn": "x", "endingPosition": "latest"}, True, "batch reads only"),
        ({"dsn": "x", "topics": "a b"}, False, "invalid topic"),
        ({"dsn": "x", "colour": "red"}, False, "unknown pgmbus read option"),
    ],
)
def test_bad_read_options_are_named(options: dict[str, str], streaming: bool, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_read(options, streaming=streaming)


def test_write_options() -> None:
    assert parse_write({"dsn": "x", "topic": "orders"}).sink == "topic:orders"
    assert parse_write({"dsn": "x", "queue": "jobs"}).queue == "jobs"
    assert parse_write({"dsn": "x"}).topic is None
    with pytest.raises(ConfigurationError, match="not both"):
        parse_write({"dsn": "x", "topic": "a", "queue": "b"})
    with pytest.raises(ConfigurationError, match="invalid queue name"):
        parse_write({"dsn": "x", "queue": "Jobs!"})


def test_topics_empty_means_all() -> None:
    assert parse_topics(None) is None
    assert parse_topics(" , ") is None
