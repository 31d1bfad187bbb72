"""What a pgbench scenario is made of: paths (one kind of work), sides (who does it), options."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import LiteralString

HERE = Path(__file__).parent
SCRIPTS = HERE / "scripts"

#: 75 bytes of JSON: the payload of every message of every side.
PAYLOAD = '{"order":4242,"customer":"c-000000042","status":"created","amount":1234.50}'
assert len(PAYLOAD.encode()) == 75, len(PAYLOAD.encode())

_NAME_LINE = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


@functools.cache
def queries(filename: str) -> dict[str, LiteralString]:
    """The ``-- name: x`` blocks of ``bench/sql/<filename>`` (setup, fill and count SQL)."""
    text: LiteralString = (HERE / filename).read_text("utf-8")
    parts = _NAME_LINE.split(text)
    found: dict[str, LiteralString] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in found:
            raise ValueError(f"{filename}: block {name!r} is defined twice")
        found[name] = body.strip()
    return found


@dataclass(frozen=True)
class Side:
    """One implementation of a path: an engine and its pgbench script.

    ``prepare`` blocks run once in the side's fresh database; ``defines`` is a block whose one
    row becomes pgbench variables (and fill parameters). Consume paths name a ``backlog`` block
    (how many messages can still be consumed: the messages of a run are its drop) and ``fill``
    blocks that add ``%(n)s`` messages, run in order per chunk of ``fill_chunk``.
    """

    name: str
    engine: str
    script: str
    per_tx: int = 1
    prepare: tuple[str, ...] = ()
    defines: str | None = None
    backlog: str | None = None
    fill: tuple[str, ...] = ()
    fill_chunk: int = 50_000
    note: str = ""


@dataclass(frozen=True)
class PathSpec:
    """One kind of work (``post1``, ``pop``, ...), measured for every side in the same run."""

    name: str
    title: str
    sides: tuple[Side, ...]
    sync: tuple[bool, ...] = (True, False)
    max_clients: int | None = None
    #: a first guess of the fastest side's rate per client, to size the first pre-fill
    guess_per_client: float = 20_000.0

    @property
    def consumes(self) -> bool:
        return any(s.backlog for s in self.sides)


@dataclass
class Options:
    """How long, how many clients, which modes; what a command line can set."""

    clients: tuple[int, ...] = (1, 4, 8)
    sync: tuple[bool, ...] | None = None  # None: each path's own modes
    rounds: int = 3
    seconds: float = 5.0
    transactions: int | None = None  # pgbench -t instead of -T (smoke tests)
    paths: tuple[str, ...] | None = None
    sides: tuple[str, ...] | None = None  # None: every side of each path
    pgmq_sql: Path | None = None
    durable: bool = True
    keep_going: bool = False
    extra: dict[str, str] = field(default_factory=dict)


def with_reference(paths: tuple[PathSpec, ...]) -> tuple[PathSpec, ...]:
    """Add side ``pgmbus-ref`` after every ``pgmbus`` side when ``$PGMBUS_REF_SRC`` is set.

    It runs the pgmbus side's script on the schema of that other checkout (say main), in the
    same run: a before/after comparison under the same load.
    """
    if not os.environ.get("PGMBUS_REF_SRC"):
        return paths
    out: list[PathSpec] = []
    for path in paths:
        sides = list(path.sides)
        for side in path.sides:
            if side.name == "pgmbus":
                sides.insert(
                    sides.index(side) + 1,
                    dataclasses.replace(side, name="pgmbus-ref", engine="mbus_ref"),
                )
        out.append(dataclasses.replace(path, sides=tuple(sides)))
    return tuple(out)
