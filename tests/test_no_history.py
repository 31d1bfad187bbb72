"""The product states what is, not how it came to be: no issue or session numbers, waves,
phases, turns, branch names or "new in" notes in code, SQL, docs, examples, benchmarks or tools
(git history holds the story; CHANGELOG.md, which names versions, is not scanned)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HISTORY = re.compile(
    r"\b(?:issues?|sessions?|waves?|phases?|turns?)\s+#?\d+"
    r"|\(new in\b|\bsince issue\b|\bwhere issue\b"
    r"|\bitems? \d+(?:-\d+)?\b(?! *:)",
    re.IGNORECASE,
)
# Migrations shipped in a release are frozen: every database that applied one keeps its
# checksum, and `pgmbus upgrade` refuses a file that changed (0.1.0 shipped 0001-0023, 0.2.0
# 0024-0026).
RELEASED_MIGRATIONS = 26
SUFFIXES = {".py", ".sql", ".md", ".toml", ".cfg", ".txt", ".html", ".js", ".css", ".sh", ""}


def _product_files() -> list[Path]:
    roots = [ROOT / "src", ROOT / "docs", ROOT / "examples", ROOT / "bench", ROOT / "tools"]
    files = [ROOT / "README.md", ROOT / "Makefile", ROOT / "pyproject.toml"]
    for root in roots:
        files += [p for p in root.rglob("*") if p.is_file() and p.suffix in SUFFIXES]
    return [
        p
        for p in files
        if "__pycache__" not in p.parts and p.exists() and not _released_migration(p)
    ]


def _released_migration(path: Path) -> bool:
    return (
        path.parent.name == "migrations"
        and path.name[:4].isdigit()
        and int(path.name[:4]) <= RELEASED_MIGRATIONS
    )


def test_no_history_words_in_the_product() -> None:
    found = []
    for path in _product_files():
        for number, line in enumerate(path.read_text("utf-8", errors="replace").splitlines(), 1):
            if match := HISTORY.search(line):
                where = f"{path.relative_to(ROOT)}:{number}"
                found.append(f"{where}: {match.group(0)!r} in {line.strip()}")
    assert not found, "history in the product (say what is):\n" + "\n".join(found)


def test_the_pattern_catches_what_it_is_for() -> None:
    # the samples are built from parts, so this file does not hold what it looks for
    for word, rest in (
        ("issue", "14"),
        ("(issue", "12, items 1-8)"),
        ("session", "7"),
        ("Where issue", "14 ends"),
        ("wave", "2"),
        ("phase", "2"),
        ("turn", "1"),
        ("(new", "in 0.2)"),
    ):
        text = f"{word} {rest}"
        assert HISTORY.search(text), text
    for text in ("the session's pid", "a phase of the move", "return 0", "item 2: retry.factor"):
        assert not HISTORY.search(text), text
