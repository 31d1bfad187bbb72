"""The fast tier's table names tests that exist (a renamed test would silently come back)."""

from __future__ import annotations

from pathlib import Path

from tests.tiers import SLOW, process_group

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
