"""The SQL layout: one home per function, fixed headers, and named queries that Python uses.

Migrations hold tables and data; each function or view lives in one file of
``sql/functions/<engine>/`` named after it, with a header in a fixed form; every named query of
``sql/*.sql`` is used by Python and every query Python asks for by a literal name exists.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path
from typing import TypeGuard

import psycopg

from pgmbus import schema
from pgmbus.sqlfiles import load_queries
from tools import sql_headers

ROOT = Path(__file__).resolve().parents[1]
SQL = ROOT / "src" / "pgmbus" / "sql"
FUNCTIONS = SQL / "functions"
_DEFINES = re.compile(
    r"^CREATE\s+(?:OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE|VIEW)\s+mbus\.(\w+)", re.I | re.M
)
_FUNCTION_FIELDS = ("Purpose", "Params", "Returns", "Locks", "Calls", "Tables")
_VIEW_FIELDS = ("Purpose", "Locks", "Calls", "Tables")


def _function_files() -> list[Path]:
    return sorted(FUNCTIONS.glob("*/*.sql"))


def test_every_function_and_view_is_defined_in_exactly_one_file() -> None:
    homes: dict[str, list[str]] = defaultdict(list)
    for path in _function_files():
        for _, name in _DEFINES.findall(path.read_text("utf-8")):
            homes[name].append(str(path.relative_to(FUNCTIONS)))
    twice = {name: paths for name, paths in homes.items() if len(set(paths)) > 1}
    assert not twice
    for path in _function_files():
        defined = [name for _, name in _DEFINES.findall(path.read_text("utf-8"))]
        assert path.stem in defined, f"{path.name} must be named after a function it defines"


def test_migrations_define_no_function_view_or_trigger() -> None:
    for path in sorted((SQL / "migrations").glob("*.sql")):
        text = path.read_text("utf-8")
        assert not _DEFINES.search(text), path.name
        assert not re.search(r"^\s*CREATE\s+(OR\s+REPLACE\s+)?(CONSTRAINT\s+)?TRIGGER", text, re.M)
        assert not re.search(r"^\s*SELECT\s+mbus\.", text, re.M), f"{path.name} calls a function"


def test_every_function_file_starts_with_the_fixed_header() -> None:
    bad: list[str] = []
    for path in _function_files():
        text = path.read_text("utf-8")
        kind, name = _DEFINES.findall(text)[0]
        header = text.split("\nCREATE", 1)[0]
        first = header.splitlines()[0]
        label = "View" if kind.upper() == "VIEW" else "Function"
        fields = _VIEW_FIELDS if label == "View" else _FUNCTION_FIELDS
        if not first.startswith(f"-- {label}: mbus.{name}"):
            bad.append(f"{path.name}: first line {first!r}")
        positions = [header.find(f"\n-- {field}:") for field in fields]
        if -1 in positions or positions != sorted(positions):
            bad.append(f"{path.name}: needs {', '.join(fields)} in this order")
        design = header.find("\n-- Design:")
        if design != -1 and design < max(positions):
            bad.append(f"{path.name}: Design, when there is one, comes after Tables")
        if re.search(r"\bFILL\b|\bTODO\b", header):
            bad.append(f"{path.name}: unfinished header")
        if any(not line.startswith("--") for line in header.splitlines()):
            bad.append(f"{path.name}: the header is comment lines only")
        if "\n-- Callers:" in header:
            bad.append(f"{path.name}: Callers rots (Calls and Tables are read from the body)")
    assert not bad, "\n".join(bad)


def test_every_header_lists_exactly_what_its_body_calls_and_touches() -> None:
    # python tools/sql_headers.py --write rewrites the two fields from the bodies
    assert sql_headers.problems() == []


def test_the_header_check_sees_a_missing_or_extra_name(tmp_path: Path) -> None:
    functions, relations = sql_headers.known()
    body = (
        "CREATE OR REPLACE FUNCTION mbus.probe() RETURNS void LANGUAGE sql AS $$\n"
        "    -- mbus.post( in a comment is no call\n"
        "    SELECT mbus.require_queue('q') FROM mbus.queue AS q, mbus.dmq;\n"
        "    INSERT INTO mbus.consumer (qname) SELECT mbus.queue_role ('q');\n$$;\n"
    )
    assert sql_headers.used(body, functions, relations) == {
        "Calls": ["queue_role", "require_queue"],
        "Tables": ["consumer", "dmq", "queue"],
    }
    path = tmp_path / "probe.sql"
    path.write_text(
        "-- Function: mbus.probe()\n-- Calls:    mbus.require_queue,\n"
        "--           mbus.queue_role\n-- Tables:   none\n" + body,
        "utf-8",
    )
    header = sql_headers.read(path)
    assert header.field("Calls") == ["require_queue", "queue_role"]
    assert header.field("Tables") == []
    assert header.field("Callers") is None


def test_the_header_check_sees_a_long_purpose_and_a_design_anchor_that_is_missing(
    tmp_path: Path,
) -> None:
    anchors = sql_headers.github_anchors(
        "# Top\n## Why the SQL is written as it is\n### `timer_claim`: a fair share, per client\n"
        "```text\n# not a heading\n```\n### Why the SQL is written as it is\n"
    )
    assert anchors == {
        "top",
        "why-the-sql-is-written-as-it-is",
        "timer_claim-a-fair-share-per-client",
        "why-the-sql-is-written-as-it-is-1",
    }
    path = tmp_path / "probe.sql"
    purpose = "-- Purpose:  Does one thing.\n" + "--           and says so.\n" * 7
    design = "-- Design:   docs/DESIGN.md#timer_claim-a-fair-share-per-client\n"
    path.write_text(f"-- Function: mbus.probe()\n{purpose}{design}CREATE", "utf-8")
    assert sql_headers.design_problems(sql_headers.read(path), anchors) == []
    path.write_text(
        f"-- Function: mbus.probe()\n{purpose}--           and more.\n"
        "-- Design:   docs/DESIGN.md#timer_claim\nCREATE",
        "utf-8",
    )
    found = sql_headers.design_problems(sql_headers.read(path), anchors)
    assert len(found) == 2
    assert "Purpose has 9 lines" in found[0]
    assert "#timer_claim is no heading" in found[1]


def test_order_lists_every_function_file_once() -> None:
    functions = schema.function_set()
    assert sorted(f.path for f in functions.files) == sorted(
        str(p.relative_to(FUNCTIONS)) for p in _function_files()
    )


def test_a_fresh_database_has_exactly_the_functions_of_the_files(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    functions = schema.function_set()
    rows = conn.execute(
        "SELECT p.proname FROM pg_proc AS p WHERE p.pronamespace = 'mbus'::regnamespace "
        "AND NOT EXISTS (SELECT FROM mbus.queue)"
    ).fetchall()
    assert rows, "the shared test database must have no queue"
    assert {str(r[0]) for r in rows} == set(functions.functions)
    views = conn.execute(
        "SELECT c.relname FROM pg_class AS c "
        "WHERE c.relnamespace = 'mbus'::regnamespace AND c.relkind = 'v'"
    ).fetchall()
    assert {str(r[0]) for r in views} == set(functions.views)


# --- named queries ------------------------------------------------------------------------------


def _query_files() -> dict[str, set[str]]:
    return {
        path.name: set(load_queries(path.name))
        for path in sorted(SQL.glob("*.sql"))
        if "-- name:" in path.read_text("utf-8")
    }


class _Uses(ast.NodeVisitor):
    """What one module asks of the query files: by literal name, and every string it holds."""

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.loaders: set[str] = set()  # names bound to load_queries(...) or functions using it
        self.asked: set[str] = set()
        self.strings: set[str] = set()

    def collect(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _is_load(node):
                self.files.update(
                    a.value for a in node.args if isinstance(a, ast.Constant) and _is_str(a.value)
                )
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and _is_load(node.value)
            ):
                self.loaders.update(t.id for t in node.targets if isinstance(t, ast.Name))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                isinstance(n, ast.Call) and _is_load(n) for n in ast.walk(node)
            ):
                self.loaders.add(node.name)
            if isinstance(node, ast.Constant) and _is_str(node.value):
                self.strings.add(node.value)

    def imports(self, tree: ast.Module, others: dict[str, _Uses]) -> bool:
        """Take over the query files and loaders this module imports from another one, and
        count as loaders its functions that index a loader; whether anything was added."""
        before = (len(self.loaders), len(self.files))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in others:
                source = others[node.module]
                for alias in node.names:
                    if alias.name in source.loaders:
                        self.loaders.add(alias.asname or alias.name)
                        self.files |= source.files
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                isinstance(n, ast.Subscript) and self._is_loader(n.value) for n in ast.walk(node)
            ):
                self.loaders.add(node.name)
        return (len(self.loaders), len(self.files)) != before

    def ask(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.slice, ast.Constant)
                and self._is_loader(node.value)
                and _is_str(node.slice.value)
            ):
                self.asked.add(node.slice.value)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
                first = node.args[0]
                if (
                    node.func.id in self.loaders
                    and isinstance(first, ast.Constant)
                    and _is_str(first.value)
                    and not first.value.endswith(".sql")
                ):
                    self.asked.add(first.value)

    def _is_loader(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.loaders
        if isinstance(node, ast.Call):
            return _is_load(node) or (
                isinstance(node.func, ast.Name) and node.func.id in self.loaders
            )
        return False


def _is_str(value: object) -> TypeGuard[str]:
    return isinstance(value, str)


def _is_load(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id == "load_queries"


def _modules() -> dict[Path, _Uses]:
    """The modules of src/, bench/ and tools/ that use query files (directly or imported)."""
    trees: dict[str, tuple[Path, ast.Module]] = {}
    for folder in ("src", "bench", "tools"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder if folder == "src" else ROOT).with_suffix("")
            trees[".".join(parts.parts)] = (path, ast.parse(path.read_text("utf-8")))
    uses: dict[str, _Uses] = {}
    for name, (_, tree) in trees.items():
        uses[name] = _Uses()
        uses[name].collect(tree)
    # loaders are imported from the data-access modules, then from modules that wrap them
    while any([uses[name].imports(tree, uses) for name, (_, tree) in trees.items()]):
        pass
    for name, (_, tree) in trees.items():
        uses[name].ask(tree)
    return {trees[name][0]: u for name, u in uses.items() if u.files}


def test_every_query_python_asks_for_by_name_exists() -> None:
    files = _query_files()
    missing = []
    for path, uses in _modules().items():
        known = set().union(*(files.get(f, set()) for f in uses.files))
        missing += [f"{path.name}: {name}" for name in sorted(uses.asked - known)]
    assert not missing


def test_every_named_query_is_used_by_python() -> None:
    used: dict[str, set[str]] = defaultdict(set)
    for uses in _modules().values():
        for f in uses.files:
            used[f] |= uses.strings
    unused = [
        f"{f}: {name}" for f, names in _query_files().items() for name in sorted(names - used[f])
    ]
    assert not unused
