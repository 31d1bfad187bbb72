"""The fast tier's table names tests that exist (a renamed test would silently come back)."""

from __future__ import annotations

from pathlib import Path

from tests.tiers import SLOW

ROOT = Path(__file__).resolve().parents[1]


def test_every_slow_entry_names_an_existing_module_and_test() -> None:
    for module, test, why in SLOW:
        path = ROOT / module
        assert path.is_file(), module
        assert why
        if test != "*":
            assert f"def {test}(" in path.read_text(), f"{module}::{test} does not exist"
