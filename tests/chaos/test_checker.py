"""The history checker on hand-made histories: each category is detected, and only it."""

from __future__ import annotations

from pgmbus.testing.chaos import Delivery, History, check, format_table
from pgmbus.testing.chaos.history import OpType, Unknown


def _produce(history: History, outcomes: dict[str, OpType]) -> None:
    for value, outcome in outcomes.items():
        history.record("w", "p", "invoke", "enqueue", value)
        history.record("w", "p", outcome, "enqueue", value)


def _d(*values: str) -> list[Delivery]:
    return [Delivery(v, f"m-{v}") for v in values]


def test_a_clean_history_is_valid() -> None:
    h = History()
    _produce(h, {"a/1": "ok", "a/2": "ok", "a/3": "fail"})
    r = check("w", h.ops(), _d("a/1", "a/2"))
    assert (r.attempted, r.acknowledged, r.failed, r.delivered) == (3, 2, 1, 2)
    assert r.valid and r.lost == r.duplicated == r.phantom == r.reordered == 0


def test_lost_acknowledged_value() -> None:
    h = History()
    _produce(h, {"a/1": "ok", "a/2": "ok"})
    r = check("w", h.ops(), _d("a/1"))
    assert r.lost == 1 and r.examples["lost"] == ["a/2"] and not r.valid


def test_unknown_outcome_may_or_may_not_be_delivered() -> None:
    h = History()
    _produce(h, {"a/1": "info", "a/2": "info"})
    r = check("w", h.ops(), _d("a/1"))
    assert r.unknown == 2 and r.recovered == 1 and r.lost == 0 and r.valid


def test_dead_lettered_is_not_lost() -> None:
    h = History()
    _produce(h, {"a/1": "ok"})
    r = check("w", h.ops(), [], dead=["a/1"])
    assert r.lost == 0 and r.dead == 1 and r.valid


def test_phantom_delivery() -> None:
    h = History()
    _produce(h, {"a/1": "ok"})
    r = check("w", h.ops(), _d("a/1", "z/9"))
    assert r.phantom == 1 and r.examples["phantom"] == ["z/9"] and not r.valid


def test_failed_but_delivered() -> None:
    h = History()
    _produce(h, {"a/1": "fail"})
    r = check("w", h.ops(), _d("a/1"))
    assert r.failed_delivered == 1 and not r.valid


def test_retry_that_succeeds_after_unknown_counts_once_as_acknowledged() -> None:
    h = History()
    _produce(h, {"a/1": "info"})
    _produce(h, {"a/1": "ok"})
    r = check("w", h.ops(), _d("a/1"))
    assert (r.attempted, r.acknowledged, r.unknown) == (1, 1, 0) and r.valid


def test_redelivery_breaks_exactly_once_only() -> None:
    h = History()
    _produce(h, {"a/1": "ok"})
    twice = [Delivery("a/1", "m1"), Delivery("a/1", "m1")]
    r = check("w", h.ops(), twice)
    assert r.redelivered == 1 and r.stored_twice == 0 and r.duplicated == 1 and not r.valid
    assert check("w", h.ops(), twice, exactly_once=False).valid


def test_stored_twice_is_told_apart_from_redelivery() -> None:
    h = History()
    _produce(h, {"a/1": "ok"})
    r = check("w", h.ops(), [Delivery("a/1", "m1"), Delivery("a/1", "m2")])
    assert r.stored_twice == 1 and r.redelivered == 0 and r.examples["duplicated"] == ["a/1"]
    assert r.valid, "a producer's duplicate is reported, not judged against the consumer"
    strict = check(
        "w", h.ops(), [Delivery("a/1", "m1"), Delivery("a/1", "m2")], idempotent_producer=True
    )
    assert strict.stored_twice == 1 and not strict.valid, "queues' client iids promise 0"


def test_reordering_per_key() -> None:
    h = History()
    _produce(h, {"a/1": "ok", "a/2": "ok", "a/3": "ok", "b/1": "ok", "b/2": "ok"})
    deliveries = _d("b/1", "a/1", "a/3", "b/2", "a/2")
    r = check("w", h.ops(), deliveries, ordered=True)
    assert r.reordered == 1 and r.examples["reordered"] == ["a/2 after a/3"] and not r.valid
    assert check("w", h.ops(), deliveries).valid, "unordered paths only report it"


def test_other_workloads_and_functions_are_ignored() -> None:
    h = History()
    _produce(h, {"a/1": "ok"})
    h.record("other", "p", "invoke", "enqueue", "x/1")
    h.record("w", "c", "invoke", "dequeue", "a/1")
    r = check("w", h.ops(), _d("a/1"))
    assert r.attempted == 1 and r.valid


def test_op_context_records_ok_fail_and_info() -> None:
    h = History()
    with h.op("w", "p", "enqueue", "a/1"):
        pass
    with h.op("w", "p", "enqueue", "a/2"):
        raise Unknown("cut")
    try:
        with h.op("w", "p", "enqueue", "a/3"):
            raise ValueError("refused")
    except ValueError:
        pass
    types = [(o.value, o.type) for o in h.ops()]
    assert types == [
        ("a/1", "invoke"),
        ("a/1", "ok"),
        ("a/2", "invoke"),
        ("a/2", "info"),
        ("a/3", "invoke"),
        ("a/3", "fail"),
    ]
    assert h.ops()[-1].error == "ValueError: refused"


def test_table_has_a_verdict_per_row() -> None:
    h = History()
    _produce(h, {"a/1": "ok"})
    good = check("w", h.ops(), _d("a/1"), fault="none")
    bad = check("w", h.ops(), [], fault="kill-9")
    table = format_table([good, bad]).splitlines()
    assert table[0].startswith("| workload") and "verdict" in table[0]
    assert table[2].rstrip(" |").endswith("ok") and table[3].rstrip(" |").endswith("FAIL")


def test_table_says_what_each_path_promises_and_counts_duplicates() -> None:
    history = History()
    for v in ("k/1", "k/2"):
        history.record("w", "p", "invoke", "enqueue", v)
        history.record("w", "p", "ok", "enqueue", v)
    deliveries = [Delivery("k/2", "m2"), Delivery("k/1", "m1"), Delivery("k/1", "m1")]
    lease = check("w", history.ops(), deliveries, exactly_once=False)
    stream = check("w", history.ops(), deliveries[:2], ordered=True)
    header, _, lease_row, stream_row = format_table([lease, stream]).splitlines()
    cells = [c.strip() for c in header.split("|")]
    row = dict(zip(cells, (c.strip() for c in lease_row.split("|")), strict=True))
    assert (row["promise"], row["duplicated"], row["redelivered"]) == (">=1x", "1", "1")
    assert row["verdict"] == "ok"
    row = dict(zip(cells, (c.strip() for c in stream_row.split("|")), strict=True))
    assert (row["promise"], row["reordered"], row["verdict"]) == ("1x+order", "1", "FAIL")
