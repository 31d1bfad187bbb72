"""``--json`` output uses the words of docs/vocabulary.md: ``queue``, ``consumer``, ``group``,
``dmq``, as ``pgmbus top --json``, HTTP and the metrics do (not SQL's ``qname``, ``cname``,
``group_name``, ``dead_letters``)."""

from __future__ import annotations

import json

import psycopg

from pgmbus import streams
from pgmbus.queues import Bus
from tests.cli.conftest import run

OLD_KEYS = {"qname", "cname", "group_name", "dead_letters"}


def test_listing_commands_speak_the_vocabulary(db_dsn: str) -> None:
    with Bus(db_dsn) as bus:
        bus.create_queue("jobs")
        first = bus.post("jobs", {"n": 1})
        bus.post("jobs", {"n": 2}, consume_after=[first])
        [message] = bus.lease("jobs", limit=1, lease=30)
        bus.bury(message, "poison")
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        streams.create_group(conn, "audit")
    expected = {
        ("queue", "stats"): {"queue", "consumer", "dmq"},
        ("queue", "list"): {"queue"},
        ("queue", "counters"): {"queue", "consumer"},
        ("queue", "waiting"): {"queue"},
        ("dmq", "list"): {"queue", "consumer"},
        ("streams", "groups"): {"group", "dmq"},
    }
    for command, keys in expected.items():
        result = run(*command, "--json", "--dsn", db_dsn)
        assert result.exit_code == 0, result.output
        rows = json.loads(result.stdout)
        assert rows, command
        for row in rows:
            assert keys <= set(row), (command, sorted(row))
            assert not OLD_KEYS & set(row), (command, sorted(row))
