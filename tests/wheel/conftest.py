"""The package as users get it: one wheel and one sdist per session, a venv with only the wheel.

Every command of the tier runs with its working directory outside the checkout and without
PYTHONPATH, so nothing of the checkout can stand in for what the wheel lacks. The extras are
installed into the same venv one after the other, base first: what the base install can import
is recorded before any extra arrives.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# packages that only the extras bring (the base install is the client and the CLI)
EXTRA_ONLY = [
    "fastapi",
    "uvicorn",
    "httpx",
    "croniter",
    "uvloop",
    "pyspark",
    "pyarrow",
    "pandas",
    "celery",
    "kombu",
    "django",
    "adbc_driver_postgresql",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of this folder is in the wheel tier (`-m "not wheel"` leaves it out)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.wheel)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH, no active virtualenv."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PGMBUS_")}
    env.update(extra)
    return env


@dataclass(frozen=True)
class Built:
    """The wheel and the sdist built from the checkout."""

    wheel: Path
    sdist: Path


def clean_copy(target: Path) -> Path:
    """The checkout's files (tracked, and new ones git does not ignore) copied to ``target``.

    Building from the checkout itself would reuse the ``build/`` and ``*.egg-info`` that an
    earlier build or the editable install left there, and those can hold files that a build
    from a fresh clone does not: the very thing this tier must see.
    """
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "-co", "--exclude-standard"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The wheel and the sdist, built once per session with ``python -m build``."""
    source = clean_copy(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
        cwd=out,
        env=clean_env(),
    )
    [wheel] = out.glob("pgmbus-*.whl")
    [sdist] = out.glob("pgmbus-*.tar.gz")
    return Built(wheel, sdist)


@dataclass
class WheelEnv:
    """A virtualenv with the wheel installed (and the extras asked for so far)."""

    root: Path
    wheel: Path
    home: Path  # the working directory of every command: outside the checkout
    base_imports: list[str] = field(default_factory=list)
    extras: set[str] = field(default_factory=set)

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def run(
        self,
        *args: str,
        timeout: float = 120,
        check: bool = True,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a program of the venv (``pgmbus``, ``python``…) as a user's shell would."""
        program = str(self.bin / args[0]) if (self.bin / args[0]).exists() else args[0]
        done = subprocess.run(
            [program, *args[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd or self.home,
            env=env or clean_env(),
        )
        if check and done.returncode != 0:
            raise AssertionError(f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    def pip_install(self, requirement: str) -> None:
        self.run(
            "python",
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            # byte-compiling pyspark's thousands of modules takes longer than unpacking them
            "--no-compile",
            "-c",
            str(ROOT / "constraints.txt"),
            requirement,
            timeout=600,
        )

    def need(self, extra: str) -> None:
        """Install ``pgmbus[extra]`` from the same wheel (once)."""
        if extra not in self.extras:
            self.pip_install(f"pgmbus[{extra}] @ {self.wheel.as_uri()}")
            self.extras.add(extra)

    def importable(self, modules: list[str]) -> list[str]:
        probe = f"import importlib.util as u; print(*[m for m in {modules!r} if u.find_spec(m)])"
        return self.run("python", "-c", probe).stdout.split()


@pytest.fixture(scope="session")
def wheel_env(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WheelEnv]:
    root = tmp_path_factory.mktemp("wheel-venv")
    venv.create(root, with_pip=True)
    home = tmp_path_factory.mktemp("wheel-home")
    env = WheelEnv(root=root, wheel=built.wheel, home=home)
    env.pip_install(str(built.wheel))
    env.base_imports = env.importable(EXTRA_ONLY)
    yield env
