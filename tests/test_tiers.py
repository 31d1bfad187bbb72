"""The fast tier's table names tests that exist (a renamed test would silently come back)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tiers import FAST_EXAMPLES, FAST_PROFILE, SLOW, fewer_examples, process_group

ROOT = Path(__file__).resolve().parents[1]


def test_every_slow_entry_names_an_existing_module_and_test() -> None:
    for module, test, why in SLOW:
        path = ROOT / module
        assert path.is_file(), module
        assert why
        if test != "*":
            assert f"def {test}(" in path.read_text(), f"{module}::{test} does not exist"


def test_process_groups_keep_shared_fixtures_in_one_process() -> None:
    # one Spark JVM, one built wheel: every test of those folders in one group
    assert process_group("tests/spark/test_a.py::test_x") == "tests/spark/"
    assert process_group("tests/spark/sub/test_b.py::test_y[1]") == "tests/spark/"
    assert process_group("tests/wheel/test_installed.py::test_z") == "tests/wheel/"
    # elsewhere a module's tests share its module-scoped fixtures
    assert process_group("tests/queues/test_q.py::test_a") == "tests/queues/test_q.py"
    assert process_group("tests/queues/test_q.py::Class::test_b") == "tests/queues/test_q.py"
    assert process_group("tests/test_top.py::test_c") == "tests/test_top.py"


def _property(seen: list[int]) -> Any:
    @settings(max_examples=50, database=None, derandomize=True)
    @given(st.integers())
    def prop(n: int) -> None:
        seen.append(n)

    return prop


@pytest.mark.parametrize(("profile", "at_most"), [(FAST_PROFILE, FAST_EXAMPLES), (None, 50)])
def test_the_fast_profile_caps_a_property_tests_own_count(
    profile: str | None, at_most: int
) -> None:
    seen: list[int] = []
    prop = _property(seen)
    fewer_examples(cast(list[pytest.Item], [SimpleNamespace(obj=prop)]), profile)
    prop()
    # the full count runs more than the cap (integers() has far more than 50 distinct values)
    assert FAST_EXAMPLES < len(seen) <= 50 if profile is None else 0 < len(seen) <= at_most
