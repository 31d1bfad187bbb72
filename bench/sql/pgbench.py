"""Run pgbench with one script and read its summary (transactions, tps, failures)."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

_PROCESSED = re.compile(r"number of transactions actually processed: (\d+)")
_FAILED = re.compile(r"number of failed transactions: (\d+)")
_TPS = re.compile(r"tps = ([0-9.]+) \(without initial connection time\)")
_LATENCY = re.compile(r"latency average = ([0-9.]+) ms")


class PgbenchError(RuntimeError):
    """pgbench failed or its clients aborted (the message carries its output's tail)."""


@dataclass(frozen=True)
class PgbenchResult:
    """pgbench's summary of one run."""

    transactions: int
    tps: float
    latency_ms: float

    @property
    def seconds(self) -> float:
        """The measured interval (without connection time)."""
        return self.transactions / self.tps if self.tps > 0 else 0.0


def parse(output: str) -> PgbenchResult:
    """Read pgbench's summary; a run with failed transactions is an error."""
    processed = _PROCESSED.search(output)
    tps = _TPS.search(output)
    if processed is None or tps is None:
        raise PgbenchError(f"pgbench printed no summary:\n{output[-2000:]}")
    failed = _FAILED.search(output)
    if failed is not None and int(failed.group(1)) > 0:
        raise PgbenchError(f"pgbench reported failed transactions:\n{output[-2000:]}")
    latency = _LATENCY.search(output)
    return PgbenchResult(
        int(processed.group(1)), float(tps.group(1)), float(latency.group(1)) if latency else 0.0
    )


def run(
    pgbench: Path,
    conn_args: list[str],
    script: Path,
    *,
    clients: int,
    seconds: float | None,
    transactions: int | None,
    sync: bool,
    defines: dict[str, str],
) -> PgbenchResult:
    """Run ``script`` (``-M prepared -n``) with ``clients`` for ``seconds`` or ``transactions``.

    ``sync`` sets ``synchronous_commit`` for the run's connections (``PGOPTIONS``).
    """
    argv = [str(pgbench), "-n", "-M", "prepared", "-c", str(clients), "-j", str(min(clients, 2))]
    if transactions is not None:
        argv += ["-t", str(transactions)]
    else:
        argv += ["-T", str(max(1, round(seconds or 1)))]
    for key, value in sorted(defines.items()):
        argv += ["-D", f"{key}={value}"]
    argv += ["-f", str(script), *conn_args]
    env = dict(os.environ, PGOPTIONS=f"-c synchronous_commit={'on' if sync else 'off'}")
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise PgbenchError(f"pgbench exited {proc.returncode} on {script.name}:\n{output[-2000:]}")
    return parse(output)
