"""scripts/bootstrap.sh says which step it is on and how far pip is (minutes on a fresh machine)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PIP_OUTPUT = "".join(
    [f"Collecting pkg{n}>=1.0 (from pgmbus==0.1.0)\n  Downloading pkg{n}.whl\n" for n in range(25)]
    + [
        "Installing collected packages: " + ", ".join(f"pkg{n}" for n in range(25)) + "\n",
        "Successfully installed pkg0-1.0\n",
    ]
)


def _bash(script: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail; . scripts/progress.sh; {script}"],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
    )


def test_pip_progress_says_how_far_and_keeps_the_whole_log(tmp_path: Path) -> None:
    log = tmp_path / "pip.log"
    done = _bash(f"pip_progress {log}", PIP_OUTPUT)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert "resolving: 1 packages so far (pkg0>=1.0)" in lines[0]
    assert [ln for ln in lines if "resolving" in ln][-1].endswith("20 packages so far (pkg19>=1.0)")
    assert any("installing 25 packages into .venv" in ln for ln in lines)
    assert lines[-1].endswith("installed")
    assert log.read_text() == PIP_OUTPUT  # everything pip said, for the error case


def test_steps_are_numbered_and_timed() -> None:
    done = _bash('step 3 "installing something"; step_done')
    assert done.stderr.splitlines() == [
        "bootstrap [3/10] installing something",
        "bootstrap       done in 0 s",
    ]


def test_every_step_of_the_bootstrap_announces_itself() -> None:
    text = (ROOT / "scripts" / "bootstrap.sh").read_text()
    assert ". scripts/progress.sh" in text
    numbers = [int(n) for n in re.findall(r'^\s*step (\d+) "', text, flags=re.M)]
    assert numbers == list(range(1, len(numbers) + 1)), numbers
    total = re.search(r"BOOTSTRAP_STEPS:-(\d+)", (ROOT / "scripts" / "progress.sh").read_text())
    assert total is not None and int(total.group(1)) == len(numbers)  # "[K/N]" counts them all
    assert text.count("step_done") == len(numbers)
    assert "| pip_progress" in text and "pip install -q" not in text
