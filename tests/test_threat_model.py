"""docs/security.md's rules table: every test it names exists, so the table stays true."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "security.md"
# `tests/x.py::test_y`, then `::test_z` meaning the same file
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)?(?:::(\w+))?`")


def _table() -> str:
    text = DOC.read_text()
    start = text.index("## Rules and their tests")
    return text[start : text.index("\n## ", start + 1)]


def _defined(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_rule_names_tests_that_exist() -> None:
    rows = [line for line in _table().splitlines() if line.startswith("| ") and "tests/" in line]
    assert len(rows) >= 20, "the rules table lost its rows"
    missing: list[str] = []
    for row in rows:
        current: Path | None = None
        for path, name in REFERENCE.findall(row.rsplit(" | ", 1)[-1]):
            if path:
                current = ROOT / path
                if not current.is_file():
                    missing.append(path)
                    continue
            if name:
                assert current is not None, f"`::{name}` with no file before it: {row}"
                if name not in _defined(current):
                    missing.append(f"{current.relative_to(ROOT)}::{name}")
    assert not missing, f"docs/security.md names tests that do not exist: {missing}"
