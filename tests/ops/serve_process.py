"""A real ``pgmbus serve`` process on 127.0.0.1 and scrapes of its ``/metrics``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from tests.ops.conftest import free_port, wait_until


@contextmanager
def serve(dsn: str, *options: str) -> Iterator[str]:
    """Run ``python -m pgmbus serve`` (no dispatcher, ``options``) on a free port; yield its
    base URL."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [sys.executable, "-m", "pgmbus", "serve", "--dsn", dsn, "--port", str(port)]
    proc = subprocess.Popen(
        [*argv, "--no-dispatcher", *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"

    def answering() -> bool:
        try:
            return httpx.get(base + "/healthz", timeout=5).status_code == 200
        except httpx.TransportError:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            return False

    try:
        wait_until(answering, timeout=60)
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def scrape_text(base: str) -> str:
    """The body of one ``GET /metrics``."""
    r = httpx.get(base + "/metrics", timeout=30)
    assert r.status_code == 200, r.text
    return r.text


def families(text: str) -> dict[str, Metric]:
    """The exposition parsed by ``prometheus_client``, by family name."""
    return {f.name: f for f in text_string_to_metric_families(text)}
