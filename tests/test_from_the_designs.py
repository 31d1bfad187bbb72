"""docs/from-the-designs.md against the product: every pgmbus name of its tables exists.

Items of the pgmbus column: ``mbus.x`` (a function, relation, type or sequence), ``mbus.x.y``
(a column), ``mbus.f(arg)`` (an argument), with ``<q>``/``<c>`` for a queue's and a consumer's
names in generated functions; ``pgmbus ...`` commands and options; ``Bus.x``, ``streams.x``,
``StreamWorker``, ``Client`` (Python); keys of ``mbus.settings``; ``METHOD /path`` (the HTTP
API); ``header: Name`` (a header the timers' delivery code sends or reads).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import typer

from pgmbus import streams
from pgmbus.cli import app as cli_app
from pgmbus.queues import Bus
from pgmbus.streams import StreamWorker
from pgmbus.timers import Client

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "from-the-designs.md"
DESIGNS = ("mbus", "Wiki PubSub", "trigger change log", "PGMB", "CallMeBack")
PYTHON: dict[str, Any] = {"Bus": Bus, "streams": streams}
NAMED: dict[str, Any] = {"StreamWorker": StreamWorker, "Client": Client}
HTTP = re.compile(r"^(GET|POST|PATCH|PUT|DELETE) (/\S+)$")


def _rows() -> list[tuple[str, list[str]]]:
    """(section, pgmbus items) for each body row of the page's three-column tables."""
    rows: list[tuple[str, list[str]]] = []
    section = ""
    for line in PAGE.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:]
        if not line.startswith("| ") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 3, line
        if cells[1] == "pgmbus":
            continue  # a header row
        rows.append((section, re.findall(r"`([^`]+)`", cells[1])))
    return rows


ROWS = _rows()
ITEMS = sorted({item for _, items in ROWS for item in items})


def test_every_design_has_a_table_and_every_row_names_something() -> None:
    sections = {section for section, _ in ROWS}
    for design in DESIGNS:
        assert any(design in s for s in sections), design
    assert all(items for _, items in ROWS)


def test_the_page_is_linked_from_the_readme() -> None:
    assert "(docs/from-the-designs.md)" in (ROOT / "README.md").read_text()


@pytest.fixture(scope="module")
def catalog(pg_server: Any) -> Iterator[psycopg.Connection[Any]]:
    name = pg_server.create_database(installed=True)
    try:
        with psycopg.connect(pg_server.dsn(name), autocommit=True) as conn:
            conn.execute("SELECT mbus.create_queue('q')")
            conn.execute("SELECT mbus.create_consumer('q', 'c')")
            yield conn
    finally:
        pg_server.drop_database(name)


def _sql_exists(conn: psycopg.Connection[Any], item: str) -> bool:
    item = item.replace("<q>", "q").replace("<c>", "c")
    if m := re.fullmatch(r"mbus\.(\w+)\((\w+)\)", item):
        query = (
            "SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = 'mbus' AND p.proname = %s AND %s = ANY(p.proargnames)"
        )
        return conn.execute(query, m.groups()).fetchone() is not None
    if m := re.fullmatch(r"mbus\.(\w+)\.(\w+)", item):
        query = (
            "SELECT 1 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'mbus' AND c.relname = %s AND a.attname = %s "
            "AND a.attnum > 0 AND NOT a.attisdropped"
        )
        return conn.execute(query, m.groups()).fetchone() is not None
    m = re.fullmatch(r"mbus\.(\w+)", item)
    assert m, f"not a pgmbus SQL name: {item}"
    query = (
        "SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'mbus' AND p.proname = %(x)s "
        "UNION ALL SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'mbus' AND c.relname = %(x)s "
        "UNION ALL SELECT 1 FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace "
        "WHERE n.nspname = 'mbus' AND t.typname = %(x)s"
    )
    return conn.execute(query, {"x": m.group(1)}).fetchone() is not None


def _cli_exists(item: str) -> bool:
    words = item.split()[1:]
    cmd: Any = typer.main.get_command(cli_app)
    for word in (w for w in words if not w.startswith("-")):
        subs = getattr(cmd, "commands", None)
        if not subs or word not in subs:
            return False
        cmd = subs[word]
    options = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    return all(w in options for w in words if w.startswith("-"))


def _python_exists(item: str) -> bool:
    if item in NAMED:
        return True
    root, _, attr = item.partition(".")
    return root in PYTHON and bool(attr) and hasattr(PYTHON[root], attr)


def _header_exists(item: str) -> bool:
    name = item.split(":", 1)[1].strip().lower()
    code = "".join(p.read_text() for p in (ROOT / "src" / "pgmbus" / "timers").glob("*.py"))
    return f'"{name}"' in code.lower()


@pytest.fixture(scope="module")
def openapi(catalog: psycopg.Connection[Any]) -> dict[str, Any]:
    from pgmbus.http import ServiceConfig, create_app

    dsn = catalog.info.dsn
    spec: dict[str, Any] = create_app(ServiceConfig(dsn=dsn, run_dispatcher=False)).openapi()
    return spec


@pytest.mark.parametrize("item", ITEMS)
def test_every_pgmbus_name_exists(
    item: str, catalog: psycopg.Connection[Any], request: pytest.FixtureRequest
) -> None:
    if item.startswith("pgmbus "):
        assert _cli_exists(item), f"no command {item}"
    elif item.startswith("header:"):
        assert _header_exists(item), f"the timers code never names {item}"
    elif m := HTTP.match(item):
        spec = request.getfixturevalue("openapi")
        method, path = m.groups()
        assert method.lower() in spec["paths"].get(path, {}), f"no {item}"
    elif item.startswith("mbus."):
        assert _sql_exists(catalog, item), f"not in the installed schema: {item}"
    else:
        keys = {r[0] for r in catalog.execute("SELECT key FROM mbus.setting_spec()")}
        assert item in keys or _python_exists(item), f"not a setting or a Python name: {item}"
