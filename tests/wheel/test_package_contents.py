"""The wheel and the sdist carry every file the code reads at run time.

What the code reads is found from the code itself: the function files that
``sql/functions/ORDER`` lists (and ORDER), the migrations, every ``load_queries``/``read_sql``
argument written in ``src/pgmbus``, and the dashboard's static assets. Besides, every file of
the package folder that is not Python must be in the wheel, so a new kind of data file cannot
be forgotten.
"""

from __future__ import annotations

import re
import subprocess
import tarfile
import zipfile

from pgmbus import schema
from tests.wheel.conftest import ROOT, Built

PACKAGE = ROOT / "src" / "pgmbus"
_SQL_ARG = re.compile(r"""\b(?:load_queries|read_sql)\(\s*["']([^"']+)["']""")


def read_at_run_time() -> set[str]:
    """Package-relative paths (``pgmbus/...``) of the data files the code opens."""
    paths = {"pgmbus/py.typed", "pgmbus/sql/functions/ORDER"}
    paths |= {f"pgmbus/sql/functions/{f.path}" for f in schema.function_set().files}
    paths |= {f"pgmbus/sql/migrations/{m.version:04d}_{m.name}.sql" for m in schema.migrations()}
    for source in PACKAGE.rglob("*.py"):
        paths |= {f"pgmbus/sql/{arg}" for arg in _SQL_ARG.findall(source.read_text("utf-8"))}
    static = PACKAGE / "http" / "static"
    paths |= {f"pgmbus/http/static/{p.name}" for p in static.iterdir() if p.is_file()}
    return paths


def data_files_in_checkout() -> set[str]:
    """Every file git tracks under src/pgmbus that is not Python source."""
    listed = subprocess.run(
        ["git", "ls-files", "src/pgmbus"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split()
    return {p.removeprefix("src/") for p in listed if not p.endswith(".py")}


def test_the_code_reads_what_the_checkout_has() -> None:
    """The list is real: each file it names exists in the checkout (a typo would hide one)."""
    wanted = read_at_run_time()
    assert "pgmbus/sql/queues.sql" in wanted and "pgmbus/http/static/index.html" in wanted
    missing = sorted(p for p in wanted if not (ROOT / "src" / p).is_file())
    assert not missing, missing


def test_the_wheel_has_every_file_the_code_reads(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as wheel:
        names = set(wheel.namelist())
    missing = sorted((read_at_run_time() | data_files_in_checkout()) - names)
    assert not missing, f"{built.wheel.name} lacks {missing}"


def test_the_sdist_has_every_file_the_code_reads(built: Built) -> None:
    with tarfile.open(built.sdist) as sdist:
        top = sdist.getnames()[0].split("/")[0]
        names = {n.removeprefix(f"{top}/src/") for n in sdist.getnames()}
    missing = sorted((read_at_run_time() | data_files_in_checkout()) - names)
    assert not missing, f"{built.sdist.name} lacks {missing}"
