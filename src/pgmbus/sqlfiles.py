"""Load the SQL that ships inside the package (``pgmbus/sql/``).

Python never assembles SQL from strings: statements live in ``.sql`` files, either whole
(migrations) or as named blocks in a query file::

    -- name: claim_one
    SELECT ...;

The text is package data, not user input, so it is typed as ``LiteralString`` for psycopg
(mypy treats ``LiteralString`` as ``str``; the annotation records the intent).
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import LiteralString

_NAME_LINE = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


def read_sql(relpath: str) -> LiteralString:
    """Return the text of ``pgmbus/sql/<relpath>``."""
    text: LiteralString = (
        resources.files("pgmbus").joinpath("sql", *relpath.split("/")).read_text("utf-8")
    )
    return text


@functools.cache
def load_queries(relpath: str) -> dict[str, LiteralString]:
    """Parse a file of ``-- name: <name>`` blocks into a mapping of name to statement."""
    text = read_sql(relpath)
    parts = _NAME_LINE.split(text)
    queries: dict[str, LiteralString] = {}
    # parts = [preamble, name1, body1, name2, body2, ...]
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"{relpath}: query {name!r} is defined twice")
        queries[name] = body.strip()
    return queries
