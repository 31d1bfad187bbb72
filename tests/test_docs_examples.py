"""Run the examples of README.md and docs/*.md as printed, page by page, in a fresh database.

The convention (stated in README.md, "Tests and benchmarks", and checked here):

- a fenced block whose info string is ``sql`` or ``python`` runs. The blocks of one page run in
  order against ONE fresh database of the test server, so a page reads as a story: a later block
  may use what an earlier one created;
- ``sql`` blocks run statement by statement on an autocommit connection (as psql does): an
  explicit ``BEGIN`` ... ``COMMIT`` in the block is a transaction, every other statement
  commits on its own;
- ``python`` blocks are executed in one namespace per page, with ``PGMBUS_DSN`` set to the
  page's database (the DSN rule, ``pgmbus.dsn.resolve_dsn``, reads it);
- a block that cannot run says so: info string ``sql no-run`` or ``python no-run``, and its
  first line is a comment giving the reason; ``python spark`` blocks need a Spark session and
  are not run here;
- everything else (output, shell, configuration) uses another info string (``text``,
  ``console``, ``bash``, ``json``); a fence without an info string is refused, so nothing
  escapes the convention by accident.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = {"sql", "python"}
_FENCE = re.compile(r"^(\s*)(`{3,})(.*)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    flags: tuple[str, ...]
    code: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in RUNNABLE and not {"no-run", "spark"} & set(self.flags)


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown page, in order."""
    lines = path.read_text("utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, info = match.groups()
        words = info.split()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            line = lines[j]
            body.append(line[len(indent) :] if line.startswith(indent) else line)
            j += 1
        if j == len(lines):
            raise AssertionError(f"{path.name}:{i + 1}: unclosed code fence")
        found.append(
            Block(
                page=str(path.relative_to(ROOT)),
                line=i + 1,
                lang=words[0] if words else "",
                flags=tuple(words[1:]),
                code="\n".join(body) + "\n",
            )
        )
        i = j + 1
    return found


def split_sql(text: str) -> list[str]:
    """Split SQL text into statements at top-level semicolons (quotes, $$ and comments kept)."""
    statements: list[str] = []
    start = i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch in "'\"":
            end = i + 1
            while end < n:
                if text[end] == ch and text.startswith(ch * 2, end):
                    end += 2
                elif text[end] == ch:
                    break
                else:
                    end += 1
            i = end + 1
        elif ch == "$":
            tag = re.match(r"\$[A-Za-z_]*\$", text[i:])
            if tag:
                end = text.find(tag.group(0), i + len(tag.group(0)))
                i = n if end < 0 else end + len(tag.group(0))
            else:
                i += 1
        elif ch == ";":
            statements.append(text[start : i + 1])
            start = i = i + 1
        else:
            i += 1
    statements.append(text[start:])
    return [s.strip() for s in statements if _has_code(s)]


def _has_code(statement: str) -> bool:
    without = re.sub(r"--[^\n]*", "", statement)
    return bool(without.strip().strip(";").strip())


def _ids(path: Path) -> str:
    return str(path.relative_to(ROOT))


# --- the convention itself ------------------------------------------------------------------


@pytest.mark.parametrize("path", PAGES, ids=_ids)
def test_every_block_follows_the_convention(path: Path) -> None:
    """Every fence has an info string; an opted-out block says why in its first line."""
    for block in blocks_of(path):
        assert block.lang, f"{block.where}: a code fence needs an info string (sql, python, text…)"
        if "no-run" in block.flags or "spark" in block.flags:
            first = block.code.lstrip().splitlines()[0] if block.code.strip() else ""
            assert first.startswith(("#", "--")), (
                f"{block.where}: a block that does not run starts with a comment saying why"
            )


def test_the_parser_and_the_splitter() -> None:
    """The block parser and the SQL splitter handle what the pages use."""
    sql = (
        "SELECT 'a;b'; -- c;d\n"
        "SELECT $$x;y$$; SELECT $f$ ; $f$;\n"
        'SELECT "we;ird" FROM t /* ; */;\n'
        "-- only a comment;\n"
    )
    assert split_sql(sql) == [
        "SELECT 'a;b';",
        "-- c;d\nSELECT $$x;y$$;",
        "SELECT $f$ ; $f$;",
        'SELECT "we;ird" FROM t /* ; */;',
    ]
    readme = blocks_of(ROOT / "README.md")
    assert readme[0].lang == "bash", "the README opens with the two commands"
    assert readme[0].code == "make demo\nmake test\n"
    assert any(b.runs and b.lang == "sql" for b in readme)
    assert any(b.runs and b.lang == "python" for b in readme)


_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)")


@pytest.mark.parametrize("path", PAGES, ids=_ids)
def test_relative_links_point_to_files(path: Path) -> None:
    """A link to another page or file of the repository names one that exists."""
    for target in _LINK.findall(path.read_text("utf-8")):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (path.parent / target).exists(), f"{_ids(path)}: broken link to {target}"


def test_benchmarks_page_names_every_scenario() -> None:
    """docs/benchmarks.md speaks of every scenario of bench/scenarios/."""
    from bench.harness import scenario_names

    text = (ROOT / "docs" / "benchmarks.md").read_text("utf-8")
    missing = [n for n in scenario_names() if not re.search(rf"\b{n}\b", text)]
    assert not missing, f"docs/benchmarks.md says nothing of {missing}"


# --- running the pages ------------------------------------------------------------------------


def _run_sql(conn: psycopg.Connection[tuple[object, ...]], block: Block) -> None:
    for statement in split_sql(block.code):
        try:
            conn.execute(statement.encode())
        except psycopg.Error as exc:
            raise AssertionError(f"{block.where}: {statement!r} failed: {exc!r}") from exc
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        conn.execute(b"ROLLBACK")
        raise AssertionError(f"{block.where}: the block leaves a transaction open")


def _run_python(namespace: dict[str, object], block: Block) -> None:
    code = compile(block.code, f"<{block.where}>", "exec")
    try:
        exec(code, namespace)  # noqa: S102 - the docs' examples are this repository's own code
    except Exception as exc:
        raise AssertionError(f"{block.where}: the example raised {exc!r}") from exc


RUN_PAGES = [p for p in PAGES if any(b.runs for b in blocks_of(p))]


@pytest.fixture
def page_db(make_db: Callable[..., str], monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh database with the schema; ``PGMBUS_DSN`` names it for the page's Python."""
    dsn = make_db()
    monkeypatch.setenv("PGMBUS_DSN", dsn)
    yield dsn


@pytest.mark.timeout(300)
@pytest.mark.parametrize("path", RUN_PAGES, ids=_ids)
def test_page_examples_run_as_printed(path: Path, page_db: str) -> None:
    """Every runnable block of the page runs, in order, in one database."""
    namespace: dict[str, object] = {"__name__": "__docs__"}
    with psycopg.connect(page_db, autocommit=True) as conn:
        for block in blocks_of(path):
            if not block.runs:
                continue
            if block.lang == "sql":
                _run_sql(conn, block)
            else:
                _run_python(namespace, block)
