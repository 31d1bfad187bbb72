"""Generate the blocking ``Bus`` (``_sync_bus.py``) from the asyncio ``AsyncBus`` source.

Run ``python src/pgmbus/queues/_codegen.py`` after editing ``_async_bus.py``; a test fails while the
generated file is stale. The async module is written so that plain token replacements suffice.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "_async_bus.py"
TARGET = HERE / "_sync_bus.py"

HEADER = (
    '"""Bus: the blocking client of the mbus queue API.\n\n'
    "Generated from ``_async_bus.py`` by ``src/pgmbus/queues/_codegen.py``; do not edit.\n"
    '"""\n'
)

# Order matters: longer names first.
REPLACEMENTS: list[tuple[str, str]] = [
    (r"\basync with\b", "with"),
    (r"\basync for\b", "for"),
    (r"\basync def\b", "def"),
    (r"\bawait ", ""),
    (r"\basynccontextmanager\b", "contextmanager"),
    (r"\bAsyncConnectionPool\b", "ConnectionPool"),
    (r"\bAsyncConnection\b", "Connection"),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"\bAsyncBus\b", "Bus"),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"  # noqa: ASYNC109", ""),
]


def generate(source: str) -> str:
    """Return the sync module text for the async module text ``source``."""
    body = source.split('"""', 2)[2].lstrip("\n")
    for pattern, replacement in REPLACEMENTS:
        body = re.sub(pattern, replacement, body)
    return HEADER + "\n" + body


def main() -> int:
    """Write ``_sync_bus.py``; with ``--check`` only report whether it is current."""
    text = generate(SOURCE.read_text("utf-8"))
    if "--check" in sys.argv[1:]:
        current = TARGET.exists() and TARGET.read_text("utf-8") == text
        print("up to date" if current else f"{TARGET.name} is stale")
        return 0 if current else 1
    TARGET.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
