"""/metrics follows Prometheus' naming and type rules, scraped from a real ``pgmbus serve``.

Counters end in ``_total`` and never go down, also when upkeep deletes the rows they were
counted from; histograms are cumulative; units are in the names. ``promtool check metrics``
(Debian's prometheus package, installed by scripts/bootstrap.sh) lints the exposition.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable

import psycopg
import pytest
from prometheus_client.metrics_core import Metric

from tests.ops import state
from tests.ops.conftest import wait_until
from tests.ops.serve_process import families, scrape_text, serve

Values = dict[tuple[str, tuple[tuple[str, str], ...]], float]
UNIT_WORDS = {"age": "_seconds", "lag": "_seconds", "duration": "_seconds", "lateness": "_seconds"}


def values(fams: dict[str, Metric], kind: str) -> Values:
    """Every sample of the families of one type."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in fams.values()
        if f.type == kind
        for s in f.samples
    }


def check_rules(fams: dict[str, Metric]) -> None:
    assert fams, "nothing scraped"
    for name, fam in fams.items():
        assert name.startswith("pgmbus_"), name
        assert fam.type in ("counter", "gauge", "histogram"), (name, fam.type)
        assert fam.documentation.strip(), f"{name} has no help text"
        if fam.type == "counter":
            for s in fam.samples:
                assert s.name == name + "_total", s.name
        else:
            assert not name.endswith("_total"), f"the {fam.type} {name} is named as a counter"
        for word, unit in UNIT_WORDS.items():
            if word in name.split("_"):
                assert name.endswith(unit), f"{name}: a {word} is in {unit}"
        if "bytes" in name.split("_"):
            assert name.endswith("_bytes"), name
        assert not re.search(r"_(ms|milliseconds|minutes|hours|kb|mb)(_|$)", name), name
        if fam.type == "histogram":
            check_histogram(fam)


def check_histogram(fam: Metric) -> None:
    """Buckets cumulative in ``le``, the +Inf bucket equal to ``_count``."""
    buckets = sorted(
        (float(s.labels["le"]), s.value) for s in fam.samples if s.name.endswith("_bucket")
    )
    assert buckets and buckets[-1][0] == float("inf"), fam.name
    counts = [n for _, n in buckets]
    assert counts == sorted(counts), f"{fam.name}: buckets are not cumulative: {buckets}"
    count = next(s.value for s in fam.samples if s.name == fam.name + "_count")
    assert counts[-1] == count


def check_monotonic(before: dict[str, Metric], after: dict[str, Metric]) -> None:
    """No counter sample and no histogram count, sum or bucket went down between the scrapes."""
    for kind in ("counter", "histogram"):
        old, new = values(before, kind), values(after, kind)
        for key, value in old.items():
            if key in new:  # a dropped queue or consumer takes its series away
                assert new[key] >= value, f"{key} went down: {value} -> {new[key]}"


def delta(before: dict[str, Metric], after: dict[str, Metric], name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    kind = "counter" if name.endswith("_total") else "histogram"
    return values(after, kind)[key] - values(before, kind).get(key, 0.0)


def promtool(text: str) -> None:
    if shutil.which("promtool") is None:
        return
    done = subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0 and not done.stdout.strip() and not done.stderr.strip(), (
        done.stdout + done.stderr
    )


def known_queue_work(dsn: str) -> None:
    """4 posts to 'known' (one its 'strict' selector raises on), 2 consumed by 'default'."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue('known', 1)")
        conn.execute("SELECT mbus.create_consumer('known', 'strict', $$(t.data->>'n')::int > 0$$)")
        for n in ("1", "2", "3", '"x"'):
            conn.execute("SELECT mbus.post_known(%s::jsonb)", (f'{{"n": {n}}}',))
        assert len(conn.execute("SELECT * FROM mbus.consumen_known_by_default(2)").fetchall()) == 2


def test_counters_are_monotonic_typed_and_named(ops_dsn: str) -> None:
    with serve(ops_dsn) as base:
        first_text = scrape_text(base)
        first = families(first_text)
        check_rules(first)
        promtool(first_text)
        # nothing counted before the service began is counted now: the totals start at 0
        assert values(first, "counter")[("pgmbus_timer_calls_total", (("outcome", "ok"),))] == 0

        made = state.build(ops_dsn)  # 3 timer calls (ok, error, reject), 2 first calls
        known_queue_work(ops_dsn)

        def scrape_after(condition: Callable[[dict[str, Metric]], bool]) -> dict[str, Metric]:
            # a scrape counts the calls of transactions that ended before its snapshot's
            # horizon; an unrelated open transaction in the cluster may hold that back a while
            got: list[dict[str, Metric]] = []

            def ready() -> bool:
                got.append(families(scrape_text(base)))
                return condition(got[-1])

            wait_until(ready, timeout=30)
            return got[-1]

        second = scrape_after(lambda f: delta(first, f, "pgmbus_timer_lateness_seconds_count") >= 2)
        check_rules(second)
        check_monotonic(first, second)
        assert made
        for outcome, n in (("ok", 1), ("error", 1), ("reject", 1), ("refused", 0)):
            assert delta(first, second, "pgmbus_timer_calls_total", outcome=outcome) == n
        assert delta(first, second, "pgmbus_timer_lateness_seconds_count") == 2
        assert delta(first, second, "pgmbus_timer_lateness_seconds_sum") == pytest.approx(
            3.04, abs=0.01
        )
        assert delta(first, second, "pgmbus_timer_lateness_seconds_bucket", le="0.05") == 1
        assert delta(first, second, "pgmbus_timer_lateness_seconds_bucket", le="2.5") == 1
        assert delta(first, second, "pgmbus_timer_lateness_seconds_bucket", le="5.0") == 2
        assert delta(first, second, "pgmbus_queue_posted_total", queue="known") == 4
        lab = {"queue": "known", "consumer": "default"}
        assert delta(first, second, "pgmbus_queue_consumer_posted_total", **lab) == 4
        assert delta(first, second, "pgmbus_queue_consumer_consumed_total", **lab) == 2
        strict = {"queue": "known", "consumer": "strict"}
        assert delta(first, second, "pgmbus_queue_consumer_posted_total", **strict) == 3
        assert delta(first, second, "pgmbus_queue_selector_errors_total", **strict) == 1
        assert delta(first, second, "pgmbus_queue_selector_errors_total", **lab) == 0

        # upkeep deletes the attempts and the dead message; a consumer is dropped: no counter
        # goes down, and one more call is counted on top
        with psycopg.connect(ops_dsn, autocommit=True) as conn:
            conn.execute("DELETE FROM mbus.timer_attempts")
            conn.execute("DELETE FROM mbus.dmq")
            conn.execute("SELECT mbus.drop_consumer('known', 'strict')")
            conn.execute(
                "INSERT INTO mbus.timer_attempts (callback_id, attempt, call, dispatcher,"
                " started_at, finished_at, outcome, status_code)"
                " SELECT id, 2, 0, 'd1', now(), now(), 'refused', NULL"
                " FROM mbus.timer_callbacks ORDER BY id LIMIT 1"
            )
        third_text = scrape_text(base)
        third = scrape_after(
            lambda f: delta(second, f, "pgmbus_timer_calls_total", outcome="refused") >= 1
        )
        check_rules(third)
        check_monotonic(second, third)
        promtool(third_text)
        assert delta(second, third, "pgmbus_timer_calls_total", outcome="refused") == 1
        assert delta(second, third, "pgmbus_timer_calls_total", outcome="ok") == 0
        assert delta(second, third, "pgmbus_timer_lateness_seconds_count") == 0  # not a first call
        assert ("pgmbus_queue_selector_errors_total", tuple(sorted(strict.items()))) not in (
            values(third, "counter")
        )


def test_a_call_committed_late_is_counted_once(ops_dsn: str) -> None:
    """An attempt whose transaction began before a scrape and commits after it is counted by a
    later scrape, once, even when a younger transaction's attempt committed before it."""
    state.build(ops_dsn)
    insert = (
        "INSERT INTO mbus.timer_attempts (callback_id, attempt, call, dispatcher, started_at,"
        " finished_at, outcome) SELECT id, %s, 0, 'd1', now(), now(), 'ok'"
        " FROM mbus.timer_callbacks ORDER BY id LIMIT 1"
    )

    def ok(fams: dict[str, Metric]) -> float:
        return values(fams, "counter")[("pgmbus_timer_calls_total", (("outcome", "ok"),))]

    with serve(ops_dsn) as base, psycopg.connect(ops_dsn) as older:
        assert ok(families(scrape_text(base))) == 0
        older.execute(insert, (7,))  # its transaction (and xid) stays open
        with psycopg.connect(ops_dsn, autocommit=True) as younger:
            younger.execute(insert, (8,))
        held = families(scrape_text(base))
        assert ok(held) == 0  # the open older transaction holds the horizon back
        older.commit()
        wait_until(lambda: ok(families(scrape_text(base))) >= 2, timeout=30)
        for _ in range(3):
            assert ok(families(scrape_text(base))) == 2
