"""``pgmbus dev`` in a folder without a cluster: only ``start`` creates one, and says where."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgmbus.testing.server import TestServer
from tests.cli.conftest import run_process


@pytest.mark.parametrize(
    "command",
    [("psql", "--", "-c", "select 1"), ("stop",), ("status",), ("status", "--json"), ("dsn",)],
)
def test_a_dev_command_other_than_start_never_creates_a_cluster(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    home = tmp_path / "elsewhere" / ".pgmbus"
    done = run_process("dev", *command, env={"PGMBUS_HOME": str(home)})
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    assert f"no cluster at {home}" in line and "`pgmbus dev start`" in line
    assert not home.exists()


def test_destroy_without_a_cluster_deletes_nothing_and_creates_nothing(tmp_path: Path) -> None:
    home = tmp_path / ".pgmbus"
    done = run_process("dev", "destroy", "--yes", env={"PGMBUS_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert f"no cluster at {home}" in done.stdout
    assert not home.exists()


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder the server user can enter (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="pgmbus-first-contact-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_start_says_once_that_it_created_a_cluster_and_where(
    open_folder: Path, pg_server: TestServer
) -> None:
    if pg_server.cluster is None:
        pytest.skip("the session server is external (PGMBUS_TEST_DSN)")
    home = open_folder / ".pgmbus"
    env = {"PGMBUS_HOME": str(home)}
    try:
        first = run_process("dev", "start", "--json", env=env, timeout=120)
        assert first.returncode == 0, first.stderr
        assert first.stderr.count(f"created a new cluster at {home}") == 1
        again = run_process("dev", "start", "--json", env=env, timeout=120)
        assert again.returncode == 0, again.stderr
        assert "created" not in again.stderr
    finally:
        run_process("dev", "destroy", "--yes", env=env, timeout=120)
    assert not home.exists()
