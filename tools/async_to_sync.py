"""Generate the blocking twin of every asyncio module of pgmbus from its async source.

The async module is the only one written by hand; its blocking twin is made by editing the
source's tokens, so the output keeps the source's layout, comments and docstrings:

* ``async def`` / ``async with`` / ``async for`` lose ``async``; ``await`` goes;
* ``(await x.y()).z`` becomes ``x.y().z`` (the parentheses only served the ``await``);
* names in ``RENAMES`` (``AsyncConnection`` -> ``Connection``...) are replaced in code, and as
  whole words in strings and comments, where ``async with``, ``async for``, ``async def`` and
  ``await`` are rewritten too (docstring examples stay true);
* a comment that is only ``# noqa: ASYNCnnn`` goes (the rule has nothing to say of sync code);
* the module docstring's first line becomes the twin's summary (declared in ``INPUTS``), and a
  last line says where the file comes from.

The output is checked: it must parse, and contain no ``async``/``await`` and no ``asyncio``.

Usage::

    python tools/async_to_sync.py            # write every twin (make generate)
    python tools/async_to_sync.py --check    # exit 1 naming each stale twin (make lint / test)
"""

from __future__ import annotations

import argparse
import ast
import io
import keyword
import re
import sys
import token
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL = "tools/async_to_sync.py"


@dataclass(frozen=True)
class Twin:
    """One input of the generator: the async source and the blocking module made from it."""

    source: str  # path relative to the repository root
    target: str
    summary: str  # first line of the generated module's docstring
    #: names renamed in this twin only, besides ``RENAMES`` (a module imported under its
    #: blocking name, a class whose blocking twin has the plain name)
    renames: tuple[tuple[str, str], ...] = ()


#: The inputs, in generation order: async source -> generated blocking twin.
INPUTS: tuple[Twin, ...] = (
    Twin(
        "src/pgmbus/queues/_bus_async.py",
        "src/pgmbus/queues/_bus.py",
        "Bus: the blocking client of the mbus queue API.",
    ),
    Twin(
        "src/pgmbus/timers/store_async.py",
        "src/pgmbus/timers/store.py",
        "Typed blocking calls of the timers SQL API (``mbus.timer_*``); the caller owns the"
        " transaction.",
    ),
    Twin(
        "src/pgmbus/streams/client_async.py",
        "src/pgmbus/streams/client.py",
        "Typed calls of the streams SQL API on a caller's connection (they join its transaction).",
    ),
    Twin(
        "src/pgmbus/streams/worker_async.py",
        "src/pgmbus/streams/worker.py",
        "A blocking consumer loop for one group (or slot): batches, per-event retries, wake-ups.",
        renames=(
            ("client_async", "client"),
            ("AsyncStreamWorker", "StreamWorker"),
            ("AsyncHandler", "Handler"),
            ("apause", "pause"),
        ),
    ),
)

#: Names of the asyncio world and their blocking counterparts.
RENAMES: dict[str, str] = {
    "AsyncBus": "Bus",
    "AsyncConnection": "Connection",
    "AsyncConnectionPool": "ConnectionPool",
    "AsyncCursor": "Cursor",
    "AsyncIterator": "Iterator",
    "AsyncGenerator": "Generator",
    "AsyncExitStack": "ExitStack",
    "asynccontextmanager": "contextmanager",
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    # the data-access helpers (pgmbus.data.rows)
    "aone": "one",
    "arows": "rows",
}

_ASYNC_KEYWORD = re.compile(r"\basync (def|with|for)\b")
_AWAIT = re.compile(r"\bawait ")
_NOQA_ASYNC = re.compile(r"#\s*noqa:\s*ASYNC\d+\s*")
_OPENERS = {"(": ")", "[": "]", "{": "}"}


class GenerationError(Exception):
    """The async source cannot be turned into a valid blocking module."""


def _words(renames: dict[str, str]) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(map(re.escape, renames)) + r")\b")


def _text_edit(text: str, renames: dict[str, str], words: re.Pattern[str]) -> str:
    """Rewrite a string or comment: renamed words, ``async with`` and ``await`` in prose."""
    text = words.sub(lambda m: renames[m.group(1)], text)
    text = _ASYNC_KEYWORD.sub(r"\1", text)
    return _AWAIT.sub("", text)


def _matching(toks: list[tokenize.TokenInfo], start: int) -> int:
    """Index of the bracket closing the one at ``start``."""
    depth = 0
    for i in range(start, len(toks)):
        if toks[i].type == token.OP and toks[i].string in _OPENERS:
            depth += 1
        elif toks[i].type == token.OP and toks[i].string in _OPENERS.values():
            depth -= 1
            if depth == 0:
                return i
    raise GenerationError(f"unbalanced bracket at line {toks[start].start[0]}")


def _redundant_parens(toks: list[tokenize.TokenInfo], i: int) -> int | None:
    """For ``(await <primary>)`` at ``i``, the index of its ``)``; else ``None``."""
    if not (
        toks[i].string == "("
        and toks[i].type == token.OP
        and toks[i + 1].type == token.NAME
        and toks[i + 1].string == "await"
    ):
        return None
    prev = toks[i - 1] if i else None
    if prev is not None and (
        (prev.type == token.NAME and not keyword.iskeyword(prev.string))
        or (prev.type == token.OP and prev.string in (")", "]", "}"))
        or prev.type == token.STRING
    ):
        return None  # a call's parentheses
    j = _matching(toks, i)
    depth = 0  # a line break is kept only inside the primary's own brackets
    for tok in toks[i + 2 : j]:
        if tok.type == token.OP and tok.string in _OPENERS:
            depth += 1
        elif tok.type == token.OP and tok.string in _OPENERS.values():
            depth -= 1
        elif depth == 0 and not (tok.type == token.NAME or tok.string == "."):
            return None  # an operator or a line break: the parentheses do more than the await
    return j


def _offsets(source: str) -> list[int]:
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def convert(
    source: str, summary: str, origin: str, renames: tuple[tuple[str, str], ...] = ()
) -> str:
    """Return the blocking module for the async module text ``source``.

    Parameters
    ----------
    source:
        The async module's text.
    summary:
        The first line of the generated module's docstring.
    origin:
        The source's path, named in the generated docstring.
    renames:
        Names renamed in this module only, besides ``RENAMES``.
    """
    names = RENAMES | dict(renames)
    words = _words(names)
    lines = _offsets(source)

    def at(pos: tuple[int, int]) -> int:
        return lines[pos[0] - 1] + pos[1]

    toks = list(tokenize.generate_tokens(io.StringIO(source).readline))
    edits: list[tuple[int, int, str]] = []
    dropped: set[int] = set()  # indexes of parentheses already removed
    docstring_done = False
    for i, tok in enumerate(toks):
        if i in dropped:
            edits.append((at(tok.start), at(tok.end), ""))
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else tok
        if tok.type == token.NAME:
            if tok.string == "await" or (
                tok.string == "async" and nxt.string in ("def", "with", "for")
            ):
                end = at(nxt.start) if nxt.start[0] == tok.end[0] else at(tok.end)
                edits.append((at(tok.start), end, ""))
            elif tok.string in names:
                edits.append((at(tok.start), at(tok.end), names[tok.string]))
        elif tok.type == token.OP:
            close = _redundant_parens(toks, i)
            if close is not None:
                edits.append((at(tok.start), at(tok.end), ""))
                dropped.add(close)
        elif tok.type == token.STRING:
            text = _text_edit(tok.string, names, words)
            if not docstring_done:
                docstring_done = True
                text = _docstring(text, summary, origin)
            edits.append((at(tok.start), at(tok.end), text))
        elif tok.type == token.COMMENT:
            if _NOQA_ASYNC.fullmatch(tok.string):
                prev_end = at(toks[i - 1].end) if toks[i - 1].end[0] == tok.start[0] else None
                edits.append((prev_end if prev_end is not None else at(tok.start), at(tok.end), ""))
            else:
                edits.append((at(tok.start), at(tok.end), _text_edit(tok.string, names, words)))
        if tok.type not in (token.STRING, token.COMMENT, token.NL, token.NEWLINE, token.ENCODING):
            docstring_done = True  # only a leading string is the module docstring
    out = source
    for start, end, text in sorted(edits, reverse=True):
        out = out[:start] + text + out[end:]
    _verify(out, origin)
    return out


def _docstring(literal: str, summary: str, origin: str) -> str:
    if not literal.startswith('"""'):
        raise GenerationError(f"{origin}: the module docstring must use triple double quotes")
    body = literal[3:-3]
    _first, _sep, rest = body.partition("\n")
    note = f"Generated from ``{origin}`` by ``{TOOL}``; do not edit."
    rest = rest.rstrip("\n")
    text = f"{summary}\n\n{note}\n" if not rest.strip() else f"{summary}\n{rest}\n\n{note}\n"
    return f'"""{text}"""'


def _verify(out: str, origin: str) -> None:
    """Fail when the generated text is not a plain blocking module."""
    try:
        tree = ast.parse(out)
    except SyntaxError as exc:
        raise GenerationError(f"{origin}: the generated twin does not parse: {exc}") from exc
    async_nodes = (ast.AsyncFunctionDef, ast.AsyncWith, ast.AsyncFor, ast.Await)
    for node in ast.walk(tree):
        bad = isinstance(node, async_nodes) or (
            isinstance(node, ast.comprehension) and node.is_async
        )
        bad = bad or (isinstance(node, ast.Name) and node.id == "asyncio")
        bad = bad or (isinstance(node, ast.alias) and node.name.split(".")[0] == "asyncio")
        if bad:
            line = getattr(node, "lineno", "?")
            raise GenerationError(
                f"{origin}: line {line} of the twin is still async ({type(node).__name__});"
                " write the source so that the rules of tools/async_to_sync.py suffice"
            )


def generate(twin: Twin) -> str:
    """The text the twin's target must have."""
    source = (ROOT / twin.source).read_text("utf-8")
    return convert(source, twin.summary, twin.source, twin.renames)


def stale(twins: tuple[Twin, ...] | None = None) -> list[str]:
    """The targets whose file differs from what their source generates."""
    out = []
    for twin in INPUTS if twins is None else twins:
        path = ROOT / twin.target
        if not path.exists() or path.read_text("utf-8") != generate(twin):
            out.append(twin.target)
    return out


def main(argv: list[str] | None = None) -> int:
    """Write every twin; with ``--check`` only name the stale ones (exit status 1)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="fail when a twin is stale")
    args = parser.parse_args(argv)
    if args.check:
        names = stale()
        for name in names:
            print(f"{name} is stale: run `make generate` (python {TOOL})", file=sys.stderr)
        return 1 if names else 0
    for twin in INPUTS:
        text = generate(twin)  # all generated before any is written: an error writes nothing
        path = ROOT / twin.target
        if not path.exists() or path.read_text("utf-8") != text:
            path.write_text(text, "utf-8")
            print(f"wrote {twin.target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
