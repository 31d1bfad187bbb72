"""``pool="process"`` handlers are the application's code in child processes: whatever a child
answers, the worker's slot comes back and the attempt gets an outcome."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pgmbus.queues.processes import HandlerProcesses


def test_an_error_only_the_child_can_load_fails_its_attempt_and_frees_the_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The handler raises an exception of a module only its child can import (a path the
    handler added): the worker cannot load the outcome. Each attempt still fails, with a
    reason naming why, and the one child serves the next job."""
    extra = tmp_path / "child_path"
    extra.mkdir()
    (extra / "child_only_errors.py").write_text("class Boom(Exception):\n    pass\n")
    (tmp_path / "raises_child_only.py").write_text(
        "import sys\n"
        "def handle(message):\n"
        f"    sys.path.insert(0, {str(extra)!r})\n"
        "    import child_only_errors\n"
        "    raise child_only_errors.Boom('a class only the child imports')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import raises_child_only  # type: ignore[import-not-found]

    async def main() -> list[BaseException | None]:
        pool = HandlerProcesses(1, "raises_child_only.handle")
        errors: list[BaseException | None] = []
        try:
            await pool.start(raises_child_only.handle)
            for _ in range(2):  # the second needs the slot the first one used
                future, _returned = pool.submit(raises_child_only.handle, None)
                done, _ = await asyncio.wait({future}, timeout=15)
                errors.append(future.exception() if future in done else None)
        finally:
            pool.close()
        return errors

    errors = asyncio.run(main())
    assert all(error is not None for error in errors), errors  # None: no outcome, ever
    assert all("Boom" in str(error) and "child_only_errors" in str(error) for error in errors)
