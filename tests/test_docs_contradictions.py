"""The user guides do not say one thing and its opposite (found by reading them as a new user)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# phrases of the "Not exported" paragraph of operations.md -> a series that exports that thing
EXPORTED_AS = {
    "posted and consumed totals": "pgmbus_queue_posted_total",
    "selector errors": "pgmbus_queue_selector_errors_total",
}


def _paragraph_starting(text: str, start: str) -> str:
    found = [p for p in text.split("\n\n") if p.lstrip().startswith(start)]
    assert len(found) == 1, start
    return " ".join(found[0].split())


def test_celery_priority_is_not_also_a_limit() -> None:
    text = (DOCS / "integrations.md").read_text()
    assert "**Priority.**" in text and "a higher number is" in text  # documented as working
    limits = _paragraph_starting(text, "Transport options")
    assert not re.search(r"\bno priorit", limits), limits


def test_nothing_the_metrics_table_lists_is_called_not_exported() -> None:
    text = (DOCS / "operations.md").read_text()
    table = {m for m in re.findall(r"^\| `(pgmbus_\w+)`", text, flags=re.M)}
    not_exported = next(
        " ".join(p.split()) for p in text.split("\n\n") if "Not exported" in p
    ).split("Not exported", 1)[1]
    for phrase, series in EXPORTED_AS.items():
        if series in table:
            assert phrase not in not_exported.lower(), (phrase, series)
