"""The async->sync generator (tools/async_to_sync.py): its rules, and every twin is current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools import async_to_sync
from tools.async_to_sync import GenerationError, Twin, convert

SOURCE = '''"""AsyncBus: an async module.

Use it as ``async with AsyncBus() as t: await t.go()``.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from psycopg import AsyncConnection


class AsyncBus:
    async def __aenter__(self) -> AsyncBus:
        return self

    async def go(self, conn: AsyncConnection[Any], timeout: float = 0) -> int:  # noqa: ASYNC109
        row = await (await conn.execute("SELECT 1")).fetchone()
        total = (await self.count() + 1).bit_length()  # AsyncBus counts
        print(await self.count())
        async with conn.transaction():
            async for note in conn.notifies():
                return len(row) + total
        return 0

    @asynccontextmanager
    async def each(self) -> AsyncIterator[int]:
        yield 1
'''

EXPECTED = '''"""Bus: a blocking module.

Use it as ``with Bus() as t: t.go()``.

Generated from ``src/x.py`` by ``tools/async_to_sync.py``; do not edit.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from psycopg import Connection


class Bus:
    def __enter__(self) -> Bus:
        return self

    def go(self, conn: Connection[Any], timeout: float = 0) -> int:
        row = conn.execute("SELECT 1").fetchone()
        total = (self.count() + 1).bit_length()  # Bus counts
        print(self.count())
        with conn.transaction():
            for note in conn.notifies():
                return len(row) + total
        return 0

    @contextmanager
    def each(self) -> Iterator[int]:
        yield 1
'''


def test_convert_applies_every_rule_and_keeps_the_layout() -> None:
    out = convert(SOURCE, "Bus: a blocking module.", "src/x.py")
    assert out == EXPECTED
    assert convert(SOURCE, "Bus: a blocking module.", "src/x.py") == out  # deterministic


def test_a_twins_own_renames_apply_to_it_alone() -> None:
    source = (
        '"""Async w."""\n\nfrom pkg import aclient\n\n\n'
        "async def f() -> int:\n    return await aclient.go()  # aclient, not aclients\n"
    )
    out = convert(source, "W.", "w.py", (("aclient", "client"),))
    assert "from pkg import client\n" in out
    assert "    return client.go()  # client, not aclients\n" in out
    assert "    return aclient.go()" in convert(source, "W.", "w.py")  # not in another twin


def test_a_module_without_a_docstring_body_gets_summary_and_origin() -> None:
    out = convert('"""Async one-liner."""\n\nX = 1\n', "Sync one-liner.", "a.py")
    assert out.startswith('"""Sync one-liner.\n\nGenerated from ``a.py`` by')
    assert out.endswith('"""\n\nX = 1\n')


def test_asyncio_left_in_the_twin_is_refused_with_its_line() -> None:
    source = (
        '"""Doc."""\n\nimport asyncio\n\n\nasync def f() -> None:\n    await asyncio.sleep(1)\n'
    )
    with pytest.raises(GenerationError, match="line 6 of the twin is still async"):
        convert(source, "Doc.", "src/bad.py")


def test_stale_twin_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    src, dst = tmp_path / "a.py", tmp_path / "b.py"
    src.write_text('"""Async a."""\n\n\nasync def f() -> int:\n    return 1\n', "utf-8")
    twin = Twin(str(src), str(dst), "Sync a.")
    assert async_to_sync.stale((twin,)) == [str(dst)]  # missing
    monkeypatch.setattr(async_to_sync, "INPUTS", (twin,))
    assert async_to_sync.main([]) == 0
    assert "def f() -> int:" in dst.read_text("utf-8")
    assert async_to_sync.main(["--check"]) == 0
    src.write_text(src.read_text("utf-8").replace("1\n", "2\n"), "utf-8")
    assert async_to_sync.main(["--check"]) == 1
    assert f"{dst} is stale" in capsys.readouterr().err


def test_every_generated_twin_is_current() -> None:
    """Fails when an async source changed and ``make generate`` was not run."""
    for twin in async_to_sync.INPUTS:
        assert (async_to_sync.ROOT / twin.source).exists(), twin.source
    assert async_to_sync.stale() == []


def test_check_command_passes_on_the_tree() -> None:
    tool = async_to_sync.ROOT / "tools" / "async_to_sync.py"
    done = subprocess.run(
        [sys.executable, str(tool), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_parentheses_of_a_multiline_await_go_only_when_breaks_are_inside_the_call() -> None:
    source = (
        '"""Doc."""\n\n\nasync def f(conn):\n'
        "    rows = await (await conn.execute(\n        'q', {}\n    )).fetchall()\n"
        "    return (await\n            conn.x()).y\n"
    )
    out = convert(source, "Doc.", "m.py")
    assert "    rows = conn.execute(\n        'q', {}\n    ).fetchall()\n" in out
    assert "    return (\n            conn.x()).y\n" in out
