"""One data-access module per engine (``pgmbus.data``) is the only place that loads the
packaged named queries, and each query file has exactly one such home."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "pgmbus"
DATA = PACKAGE / "data"


def _loads(tree: ast.Module) -> list[ast.Call]:
    """Every call of ``load_queries`` (by name or as ``sqlfiles.load_queries``)."""
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == "load_queries":
                calls.append(node)
    return calls


def _imports_load_queries(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "pgmbus.sqlfiles"
        and any(alias.name == "load_queries" for alias in node.names)
        for node in ast.walk(tree)
    )


def _modules() -> dict[Path, ast.Module]:
    """The modules that name ``load_queries`` at all: a call or an import of it spells the
    name, so only those are worth parsing."""
    texts = {
        path: path.read_text("utf-8")
        for folder in (PACKAGE, ROOT / "bench", ROOT / "tools")
        for path in sorted(folder.rglob("*.py"))
    }
    return {path: ast.parse(text) for path, text in texts.items() if "load_queries" in text}


def test_load_queries_is_called_only_from_data_access_modules() -> None:
    outside = [
        str(path.relative_to(ROOT))
        for path, tree in _modules().items()
        if path.parent != DATA
        and path != PACKAGE / "sqlfiles.py"
        and (_loads(tree) or _imports_load_queries(tree))
    ]
    assert outside == [], "load the queries in pgmbus/data/<engine>.py and import them from there"


def test_each_query_file_is_loaded_by_one_data_access_module() -> None:
    homes: dict[str, set[str]] = defaultdict(set)
    for path in sorted(DATA.glob("*.py")):
        for call in _loads(ast.parse(path.read_text("utf-8"))):
            [arg] = call.args
            assert isinstance(arg, ast.Constant), f"{path.name}: load_queries needs a literal file"
            homes[str(arg.value)].add(path.name)
    named = {p.name for p in (PACKAGE / "sql").glob("*.sql") if "-- name:" in p.read_text()}
    assert set(homes) == named, "every file of named queries has a data-access module"
    assert {f: h for f, h in homes.items() if len(h) > 1} == {}, "a query file has one home"
