"""The pre-commit hooks run the same checks as `make test`: ruff, ruff format, the twin check,
the layer contracts and mypy, each with the project's pinned tools."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _hooks() -> dict[str, dict[str, object]]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    return {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}


def test_the_five_checks_are_hooks() -> None:
    assert set(_hooks()) == {"ruff", "ruff-format", "async-to-sync", "import-linter", "mypy"}


def test_every_hook_runs_a_pinned_tool_as_the_makefile_does() -> None:
    makefile = (ROOT / "Makefile").read_text()
    expected = {
        "ruff": "ruff check",
        "ruff-format": "ruff format",
        "async-to-sync": "python tools/async_to_sync.py --check",
        "import-linter": "lint-imports",
        "mypy": "mypy src tests",
    }
    for hook_id, command in expected.items():
        hook = _hooks()[hook_id]
        assert hook["language"] == "unsupported", hook  # the bootstrap's tools, pinned versions
        assert str(hook["entry"]).startswith(f".venv/bin/{command}"), hook
        if hook_id != "ruff-format":  # formats on commit; the tree is checked by ruff check
            assert f"$(BIN)/{command.split(' --')[0]}" in makefile, command


def test_whole_tree_checks_take_no_file_names() -> None:
    hooks = _hooks()
    assert hooks["async-to-sync"]["pass_filenames"] is False
    assert hooks["import-linter"]["pass_filenames"] is False  # the import graph of the package
    assert hooks["mypy"]["pass_filenames"] is False  # strict on the whole package and its tests
