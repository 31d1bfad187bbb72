"""Two-session races pinned with PostgreSQL's isolationtester (specs and expected outputs)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pgmbus.devdb import find_bindir

SPECS = Path(__file__).parent / "specs"


def _isolationtester() -> Path:
    tool = find_bindir().parent / "lib" / "pgxs" / "src" / "test" / "isolation" / "isolationtester"
    if not tool.is_file():
        pytest.skip("isolationtester is not installed with this server")
    return tool


@pytest.mark.parametrize("spec", sorted(p.stem for p in SPECS.glob("*.spec")))
def test_isolation_spec(spec: str, db_dsn: str) -> None:
    result = subprocess.run(
        [str(_isolationtester()), db_dsn],
        input=(SPECS / f"{spec}.spec").read_text(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == (SPECS / f"{spec}.out").read_text()
