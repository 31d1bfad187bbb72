"""docs/vocabulary.md against the code: every name exists, every old spelling still works.

The table's cells are lists of backticked items. SQL items are looked up in the installed
schema (a function, an argument, a table or a column of ``mbus``); Python items
(``Root.attr(param)``) on ``Bus`` and ``AsyncBus``, or ``pgmbus.streams`` and its ``aclient``;
CLI items (``pgmbus cmd sub --opt``) in the command tree; HTTP items (``METHOD PATH field``) in
the OpenAPI document; metrics in one real scrape's families. Old spellings (``py:``, ``cli:``,
``http:``, ``metrics:``) must be deprecated aliases that still work.
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import typer

from pgmbus import streams
from pgmbus.cli import app as cli_app
from pgmbus.http import ServiceConfig, create_app, queue_models, stream_models
from pgmbus.http.metrics import SnapshotCollector, fetch_snapshot
from pgmbus.queues import AsyncBus, Bus
from pgmbus.streams import StreamWorker, aclient
from pgmbus.testing.server import TestServer

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "vocabulary.md"
COLUMNS = ("concept", "sql", "python", "cli", "http", "metrics", "old")
PY_ROOTS: dict[str, list[Any]] = {
    "Bus": [Bus, AsyncBus],
    "streams": [streams, aclient],
    "StreamWorker": [StreamWorker],
}
PY_ITEM = re.compile(r"^(\w+)(?:\.(\w+))?(?:\((\w+)\))?$")


def _rows() -> list[dict[str, list[str]]]:
    lines = [ln for ln in DOC.read_text().splitlines() if ln.startswith("| ")]
    header, *body = lines
    assert len(header.strip("|").split("|")) == len(COLUMNS), header
    rows = []
    for line in body:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        pairs = zip(COLUMNS, cells, strict=True)
        rows.append({col: re.findall(r"`([^`]+)`", cell) for col, cell in pairs})
        rows[-1]["concept"] = [re.sub(r"\*\*(\w+)\*\*.*", r"\1", cells[0])]
    return rows


ROWS = _rows()
ITEMS = [(row["concept"][0], col, item) for row in ROWS for col in COLUMNS[1:] for item in row[col]]


def _ids(col: str) -> list[str]:
    return [f"{c}:{i}" for c, k, i in ITEMS if k == col]


def _of(col: str) -> list[tuple[str, str]]:
    return [(c, i) for c, k, i in ITEMS if k == col]


def _old(layer: str) -> list[tuple[str, str]]:
    return [(c, i.split(": ", 1)[1]) for c, k, i in ITEMS if k == "old" and i.startswith(layer)]


def _row(concept: str) -> dict[str, list[str]]:
    return next(r for r in ROWS if r["concept"][0] == concept)


def test_the_table_covers_the_issue_s_concepts() -> None:
    concepts = {r["concept"][0] for r in ROWS}
    assert {"lease", "limit", "wait", "delayed_until", "delay", "dmq", "drop"} <= concepts
    assert all(r["python"] or r["cli"] for r in ROWS)
    for page in ("README.md", "docs/cli.md"):
        assert "vocabulary.md" in (ROOT / page).read_text(), page


# --- SQL ----------------------------------------------------------------------------------------

SQL_EXISTS = """
SELECT EXISTS (SELECT FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
               WHERE n.nspname = 'mbus' AND (p.proname = %(n)s OR %(n)s = ANY(p.proargnames)))
    OR EXISTS (SELECT FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
               WHERE n.nspname = 'mbus' AND (c.relname = %(n)s OR a.attname = %(n)s))
"""


@pytest.fixture(scope="module")
def dsn(pg_server: TestServer) -> Iterator[str]:
    """An installed database with queue ``q`` and stream group ``g``."""
    name = pg_server.create_database()
    target = pg_server.dsn(name)
    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue('q', 1)")
        conn.execute("SELECT mbus.create_group('g')")
    yield target
    pg_server.drop_database(name)


def test_sql_names_are_in_the_schema(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        for concept, item in _of("sql"):
            name = item.replace("<q>", "q").replace("<c>", "default")
            row = conn.execute(SQL_EXISTS, {"n": name}).fetchone()
            assert row is not None and row[0], f"{concept}: mbus has no {name}"


# --- Python -------------------------------------------------------------------------------------


def _targets(item: str) -> tuple[list[Any], str | None]:
    m = PY_ITEM.match(item)
    assert m, item
    root, attr, param = m.groups()
    objects = []
    for obj in PY_ROOTS[root]:
        if attr is not None:
            assert hasattr(obj, attr), f"{obj!r} has no {attr}"
            obj = getattr(obj, attr)
        objects.append(obj.__init__ if inspect.isclass(obj) else obj)
    return objects, param


@pytest.mark.parametrize(("concept", "item"), _of("python"), ids=_ids("python"))
def test_python_names_exist(concept: str, item: str) -> None:
    objects, param = _targets(item)
    for obj in objects:
        if param is not None:
            assert param in inspect.signature(obj).parameters, (obj, param)


@pytest.mark.parametrize(("concept", "item"), _old("py"))
def test_old_python_spellings_are_deprecated_aliases(concept: str, item: str) -> None:
    objects, old = _targets(item)
    new_items = _row(concept)["python"]
    for obj in objects:
        if old is None:  # a renamed function: a wrapper that says what to call instead
            doc = inspect.getdoc(obj) or ""
            assert doc.startswith("Deprecated spelling of"), (obj, doc)
            assert any(n.endswith("." + doc.split("`")[1]) for n in new_items), doc
            continue
        mapping = getattr(obj, "renamed_keywords", {})
        assert old in mapping, (obj, old)
        assert old not in inspect.signature(obj).parameters
        assert item.replace(f"({old})", f"({mapping[old]})") in new_items


def test_old_python_keywords_still_work_and_warn(dsn: str) -> None:
    with Bus(dsn, rotate_every=None) as bus:
        for n in range(3):
            bus.post("q", {"n": n})
        with pytest.warns(DeprecationWarning, match=r"consume\(amount=\) is deprecated"):
            got = bus.consume("q", amount=2)  # type: ignore[call-arg]
        assert [m.data["n"] for m in got] == [0, 1]
        with pytest.warns(DeprecationWarning, match=r"consume\(timeout=\) is deprecated"):
            assert bus.consume("q", "default", limit=0, timeout=0.0) == []  # type: ignore[call-arg]
        with pytest.warns(DeprecationWarning, match=r"lease\(timeout=\)"):
            [leased] = bus.lease("q", timeout=0.0, lease=60)  # type: ignore[call-arg]
        bus.ack(leased)
        with pytest.raises(TypeError, match="both amount= and limit="):
            bus.consume("q", amount=1, limit=1)  # type: ignore[call-arg]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert bus.consume("q", limit=5, wait=0.0) == []  # the new names do not warn
    with pytest.warns(DeprecationWarning, match="max_events"):
        worker = StreamWorker(dsn, "g", lambda c, e: None, max_events=7)  # type: ignore[call-arg]
    assert worker.batch == 7


def test_old_stream_functions_still_work_and_warn(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute("UPDATE mbus.stream_groups SET max_attempts = 1 WHERE name = 'g'")
        event_id = streams.publish(conn, "t", {"n": 1})
        conn.commit()
        assert len(streams.read_next(conn, "g", limit=10)) == 1
        assert streams.retry_event(conn, "g", event_id, error="boom") == "dead"
        [dead] = streams.dmq(conn, "g")
        with pytest.warns(DeprecationWarning, match=r"dead_letters\(\) is deprecated"):
            assert streams.dead_letters(conn, "g") == [dead]
        with pytest.warns(DeprecationWarning, match="max_events"):
            streams.read_retries(conn, "g", max_events=1)  # type: ignore[call-arg]
        with pytest.warns(DeprecationWarning, match=r"replay_dead_letter\(\)"):
            streams.replay_dead_letter(conn, "g", event_id)
        assert streams.dmq(conn, "g") == []
        conn.rollback()


# --- CLI ----------------------------------------------------------------------------------------

COMMAND = typer.main.get_command(cli_app)


def _command(item: str) -> tuple[Any, list[str]]:
    words = item.split()
    assert words[0] == "pgmbus", item
    path = [w for w in words[1:] if not w.startswith("-")]
    options = [w for w in words[1:] if w.startswith("-")]
    cmd: Any = COMMAND
    for word in path:
        subs = getattr(cmd, "commands", None)
        assert subs is not None and word in subs, f"no command {' '.join(path)}"
        cmd = subs[word]
    return cmd, options


def _param(cmd: Any, option: str) -> Any:
    for p in cmd.params:
        if option in (*p.opts, *p.secondary_opts):
            return p
    raise AssertionError(f"{cmd.name} has no option {option}")


@pytest.mark.parametrize(("concept", "item"), _of("cli"), ids=_ids("cli"))
def test_cli_names_exist_and_are_shown(concept: str, item: str) -> None:
    cmd, options = _command(item)
    assert not cmd.hidden, item
    for option in options:
        assert not getattr(_param(cmd, option), "hidden", False), (item, option)


@pytest.mark.parametrize(("concept", "item"), _old("cli"))
def test_old_cli_spellings_exist_hidden(concept: str, item: str) -> None:
    cmd, options = _command(item)
    for option in options:
        _param(cmd, option)
    assert cmd.hidden or (options and all(_param(cmd, o).hidden for o in options)), item


# --- HTTP ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def openapi(dsn: str) -> dict[str, Any]:
    spec: dict[str, Any] = create_app(ServiceConfig(dsn=dsn, run_dispatcher=False)).openapi()
    return spec


def _schema(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    if "items" in schema:
        schema = schema["items"]
    if "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _operation(spec: dict[str, Any], item: str) -> tuple[dict[str, Any], str | None]:
    method, path, *field = item.split()
    assert path in spec["paths"], f"no HTTP path {path}"
    op = spec["paths"][path].get(method.lower())
    assert op is not None, f"no {method} {path}"
    return op, field[0] if field else None


def _fields(spec: dict[str, Any], op: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(request fields: body properties and query parameters, response fields)."""
    request: dict[str, Any] = {p["name"]: p for p in op.get("parameters", [])}
    body = op.get("requestBody", {}).get("content", {}).get("application/json")
    if body:
        request |= _schema(spec, body["schema"]).get("properties", {})
    response: dict[str, Any] = {}
    for code in ("200", "201"):
        content = op["responses"].get(code, {}).get("content", {}).get("application/json")
        if content:
            response |= _schema(spec, content["schema"]).get("properties", {})
    return request, response


@pytest.mark.parametrize(("concept", "item"), _of("http"), ids=_ids("http"))
def test_http_names_are_in_the_openapi_document(
    openapi: dict[str, Any], concept: str, item: str
) -> None:
    op, field = _operation(openapi, item)
    assert not op.get("deprecated"), item
    if field is not None:
        request, response = _fields(openapi, op)
        assert field in request or field in response, (item, sorted(request), sorted(response))
        assert not (request | response)[field].get("deprecated"), item


@pytest.mark.parametrize(("concept", "item"), _old("http"))
def test_old_http_spellings_are_deprecated_and_accepted(
    openapi: dict[str, Any], concept: str, item: str
) -> None:
    op, field = _operation(openapi, item)
    if field is None:
        assert op.get("deprecated"), f"{item} is not marked deprecated"
        return
    _, response = _fields(openapi, op)
    if field in response:
        assert response[field].get("deprecated"), item
        return
    # a request field: the body model takes the old spelling under its new name
    ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    model = getattr(queue_models, ref, None) or getattr(stream_models, ref)
    parsed = model.model_validate({field: 1})
    [new] = parsed.model_fields_set
    assert new != field and f"{item.rsplit(' ', 1)[0]} {new}" in _row(concept)["http"]


# --- metrics ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def families(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn) as conn:
        snap = fetch_snapshot(conn, late_after_s=5, window_s=60)
    return {f.name: f.documentation for f in SnapshotCollector(lambda _after: snap).collect()}


def test_metrics_are_exported(families: dict[str, str]) -> None:
    for concept, name in _of("metrics"):
        assert name in families, (concept, name)
        assert not families[name].startswith("Deprecated"), name
    for concept, name in _old("metrics"):
        assert families.get(name, "").startswith("Deprecated"), (concept, name)
        new = families[name].split()[-1].rstrip(".")
        assert new in _row(concept)["metrics"], (name, new)


def test_durations_follow_the_units_convention() -> None:
    # Python: bare names take seconds or a timedelta; HTTP: the unit is in the name
    for fn in (Bus.lease, Bus.nack, Bus.extend):
        for name in ("lease", "delay"):
            p = inspect.signature(fn).parameters.get(name)
            if p is not None:
                assert "timedelta" in str(p.annotation), (fn, name)
    assert {"lease_s", "wait_s"} <= set(queue_models.LeaseIn.model_fields)
    assert "delay_s" in queue_models.NackIn.model_fields
