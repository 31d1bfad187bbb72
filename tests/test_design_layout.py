"""docs/DESIGN.md's Python layout matches the tree: every package and module it names exists,
and every package and module of ``src/pgmbus`` is named in it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "pgmbus"
DESIGN = ROOT / "docs" / "DESIGN.md"


def _layout() -> dict[str, str]:
    """The entries of the ``src/pgmbus/`` block: each name in the first column -> its text."""
    text = DESIGN.read_text()
    section = text.split("### Python: one module per job", 1)[1]
    block = section.split("```text\n", 1)[1].split("```", 1)[0]
    entries: dict[str, str] = {}
    current: list[str] = []
    for line in block.splitlines()[1:]:  # the first line is src/pgmbus/ itself
        if not line.startswith("  "):
            break  # back at the repository's root (tools/, tests/ ...)
        body = line[2:]
        if body.startswith(" "):  # the text of the entry above goes on
            for name in current:
                entries[name] += " " + body.strip()
            continue
        match = re.match(r"(\S+(?: \S+)*)(?:\s{2,}(.*))?$", body)
        assert match, line
        current = match.group(1).split()
        for name in current:
            entries[name] = match.group(2) or ""
    return entries


def _tree() -> set[str]:
    packages = {f"{p.parent.name}/" for p in PACKAGE.glob("*/__init__.py")}
    modules = {p.name for p in PACKAGE.glob("*.py")} - {"__init__.py", "__main__.py"}
    return packages | modules


def test_every_package_and_module_named_in_design_exists() -> None:
    named = set(_layout())
    assert named, "no layout block found under '### Python: one module per job'"
    assert named - _tree() == set(), "DESIGN.md names what src/pgmbus does not have"


def test_every_package_and_module_is_in_design() -> None:
    assert _tree() - set(_layout()) == set(), "src/pgmbus has what DESIGN.md's layout omits"


def test_subpackages_named_in_design_exist() -> None:
    for name, said in _layout().items():
        if name.endswith("/"):
            for sub in re.findall(r"(?<![\w/])([a-z_]+)/(?!\w)", said):
                assert (PACKAGE / name / sub / "__init__.py").exists(), (
                    f"{name}{sub} is not a package"
                )


def test_every_sql_file_of_the_package_is_in_the_sql_layout() -> None:
    text = DESIGN.read_text()
    section = text.split("### SQL: migrations for data, one file per function", 1)[1]
    block = section.split("```text\n", 1)[1].split("```", 1)[0]
    named = set(re.findall(r"\b([a-z0-9_]+\.sql)\b", block))
    present = {p.name for p in (PACKAGE / "sql").glob("*.sql")}
    assert named - {"name.sql"} == present
