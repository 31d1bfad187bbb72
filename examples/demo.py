"""The README's main job: start the embedded PostgreSQL, install the schema, show each engine.

Each engine adds a section module ``examples/demo_<nn>_<engine>.py`` with a ``run(dsn)``
function; they run in file-name order against the embedded cluster (or ``PGMBUS_DSN``).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import psycopg
from rich.console import Console
from rich.rule import Rule

from pgmbus import schema
from pgmbus.dsn import resolve_dsn

HERE = Path(__file__).resolve().parent
console = Console()


def pgmbus(*args: str) -> None:
    """Run the pgmbus command as a user would, showing its output."""
    console.print(f"[dim]$ pgmbus {' '.join(args)}[/]")
    subprocess.run([sys.executable, "-m", "pgmbus", *args], check=True)


def main() -> int:
    console.print(Rule("pgmbus demo: the embedded PostgreSQL and the mbus schema"))
    pgmbus("dev", "start")
    dsn = resolve_dsn()
    with psycopg.connect(dsn) as conn:
        result = schema.install(conn)
    console.print(
        f"schema installed ({len(result.migrations)} migration(s) applied now"
        f"{', functions applied' if result.functions_applied else ''})"
    )
    pgmbus("status")

    sections = sorted(HERE.glob("demo_[0-9]*.py"))
    for number, path in enumerate(sections, start=1):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        title = module.__doc__.splitlines()[0] if module.__doc__ else path.stem
        console.print(Rule(f"[{number}/{len(sections)}] {title}"))  # how far the demo is
        module.run(dsn)
    console.print(Rule("done"))
    console.print(
        "The server keeps running: `pgmbus dev psql` opens it, `pgmbus dev stop` stops it."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
