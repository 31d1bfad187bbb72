"""Check a history against what the database holds at the end: lost, duplicated, phantom.

In the spirit of Jepsen's total-queue checker. The history says what producers attempted and
what they were told (ok, fail, unknown); the final state says what consumers delivered (their
results table, written in the consuming transaction or after it). A value is

- *acknowledged* when one of its producing attempts completed ``ok``;
- *lost* when acknowledged and neither delivered nor dead-lettered;
- *phantom* when delivered but never attempted;
- *failed but delivered* when every attempt failed definitely and it was delivered anyway;
- *duplicated* when delivered more than once: *stored twice* (two messages carry it: a
  producer's retry was stored as a second message; a failure on paths whose producers retry
  with an idempotency key, such as queues' client iids) or *redelivered* (one message, handled
  twice: at-least-once delivery);
- *recovered* when its outcome was unknown and it was delivered (allowed: the commit happened).

Reordering counts, per key, the deliveries whose sequence number is below the highest one
delivered before it for that key (first deliveries only).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pgmbus.testing.chaos.history import Op


@dataclass(frozen=True)
class Delivery:
    """One delivery found in the final state: the value and the message that carried it."""

    value: str
    message: str


@dataclass
class Report:
    """The checker's findings for one workload under one fault."""

    workload: str
    fault: str = "-"
    attempted: int = 0
    acknowledged: int = 0
    failed: int = 0
    unknown: int = 0
    delivered: int = 0
    lost: int = 0
    duplicated: int = 0
    stored_twice: int = 0
    redelivered: int = 0
    phantom: int = 0
    failed_delivered: int = 0
    recovered: int = 0
    dead: int = 0
    reordered: int = 0
    exactly_once: bool = True
    ordered: bool = False
    idempotent_producer: bool = False
    faults_injected: int = 0
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def promise(self) -> str:
        """What the path promises: ``1x`` (exactly once) or ``>=1x`` (at least once), with
        ``+order`` when per-key order is promised too."""
        return ("1x" if self.exactly_once else ">=1x") + ("+order" if self.ordered else "")

    @property
    def valid(self) -> bool:
        """Nothing lost or invented; no redelivery on an exactly-once path; no reordering on
        an ordered one; no value stored twice where producers retry with an idempotency key
        (elsewhere producer duplicates are reported, not judged)."""
        return (
            self.lost == 0
            and (not self.idempotent_producer or self.stored_twice == 0)
            and self.phantom == 0
            and self.failed_delivered == 0
            and (not self.exactly_once or self.redelivered == 0)
            and (not self.ordered or self.reordered == 0)
        )


def _split(value: str) -> tuple[str, int] | None:
    key, sep, seq = value.rpartition("/")
    return (key, int(seq)) if sep and seq.isdigit() else None


def _outcomes(ops: Iterable[Op], f: str) -> tuple[set[str], dict[str, str]]:
    """Attempted values and each value's best outcome: ok, else info, else fail."""
    attempted: set[str] = set()
    best: dict[str, str] = {}
    rank = {"fail": 0, "info": 1, "ok": 2}
    for op in ops:
        if op.f != f:
            continue
        if op.type == "invoke":
            attempted.add(op.value)
            continue
        if rank[op.type] >= rank.get(best.get(op.value, "fail"), -1):
            best[op.value] = op.type
    return attempted, best


def _reorderings(deliveries: Sequence[Delivery]) -> tuple[int, list[str]]:
    highest: dict[str, int] = {}
    seen: set[str] = set()
    count = 0
    examples: list[str] = []
    for d in deliveries:
        if d.value in seen:
            continue
        seen.add(d.value)
        parts = _split(d.value)
        if parts is None:
            continue
        key, seq = parts
        top = highest.get(key)
        if top is not None and seq < top:
            count += 1
            examples.append(f"{d.value} after {key}/{top}")
        else:
            highest[key] = seq
    return count, examples


def check(
    workload: str,
    history: Iterable[Op],
    deliveries: Sequence[Delivery],
    *,
    dead: Iterable[str] = (),
    f: str = "enqueue",
    exactly_once: bool = True,
    ordered: bool = False,
    idempotent_producer: bool = False,
    fault: str = "-",
    faults_injected: int = 0,
) -> Report:
    """Compare the producing operations ``f`` of ``workload`` in ``history`` with
    ``deliveries`` (in delivery order) and the dead-lettered values ``dead``;
    ``idempotent_producer``: a value stored twice fails the report."""
    ops = [o for o in history if o.workload == workload]
    attempted, best = _outcomes(ops, f)
    acked = {v for v, o in best.items() if o == "ok"}
    unknown = {v for v, o in best.items() if o == "info"}
    failed = {v for v, o in best.items() if o == "fail"}
    counts = Counter(d.value for d in deliveries)
    messages: dict[str, set[str]] = defaultdict(set)
    for d in deliveries:
        messages[d.value].add(d.message)
    delivered = set(counts)
    dead_set = set(dead)
    report = Report(
        workload=workload,
        fault=fault,
        attempted=len(attempted),
        acknowledged=len(acked),
        failed=len(failed),
        unknown=len(unknown),
        delivered=len(delivered),
        dead=len(dead_set),
        exactly_once=exactly_once,
        ordered=ordered,
        idempotent_producer=idempotent_producer,
        faults_injected=faults_injected,
    )
    lost = sorted(acked - delivered - dead_set)
    phantom = sorted((delivered | dead_set) - attempted)
    failed_delivered = sorted(failed & (delivered | dead_set))
    report.lost = len(lost)
    report.phantom = len(phantom)
    report.failed_delivered = len(failed_delivered)
    report.recovered = len(unknown & delivered)
    for value, n in counts.items():
        extra_messages = len(messages[value]) - 1
        report.stored_twice += extra_messages
        report.redelivered += n - 1 - extra_messages
    report.duplicated = report.stored_twice + report.redelivered
    report.reordered, reordered_examples = _reorderings(deliveries)
    dups = sorted(v for v, n in counts.items() if n > 1)
    for name, values in (
        ("lost", lost),
        ("phantom", phantom),
        ("failed_delivered", failed_delivered),
        ("duplicated", dups),
        ("reordered", reordered_examples),
    ):
        if values:
            report.examples[name] = values[:5]
    return report


COLUMNS = (
    ("workload", "workload"),
    ("fault", "fault"),
    ("promise", "promise"),
    ("faults_injected", "faults"),
    ("attempted", "attempted"),
    ("acknowledged", "acked"),
    ("unknown", "unknown"),
    ("failed", "failed"),
    ("delivered", "delivered"),
    ("lost", "lost"),
    ("phantom", "phantom"),
    ("duplicated", "duplicated"),
    ("stored_twice", "stored 2x"),
    ("redelivered", "redelivered"),
    ("recovered", "recovered"),
    ("dead", "dead"),
    ("reordered", "reordered"),
)


def format_table(reports: Sequence[Report]) -> str:
    """A Markdown table of reports, one row each, with a verdict column."""
    header = [title for _, title in COLUMNS] + ["verdict"]
    rows = [
        [str(getattr(r, attr)) for attr, _ in COLUMNS] + ["ok" if r.valid else "FAIL"]
        for r in reports
    ]
    widths = [max(len(cell) for cell in col) for col in zip(header, *rows, strict=True)]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines += [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    return "\n".join(lines)
