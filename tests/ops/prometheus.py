"""A real Prometheus server (Debian's ``prometheus``) for the chart tests: 127.0.0.1, its tsdb in
a temporary folder, scraping the given targets every second."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.ops.conftest import free_port, wait_until


class PrometheusServer:
    """One ``prometheus`` process; :meth:`query` asks its HTTP API for an instant vector."""

    def __init__(self, folder: Path, targets: list[str], port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
            "scrape_configs": [{"job_name": "pgmbus", "static_configs": [{"targets": targets}]}],
        }
        (folder / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        self.log = (folder / "prometheus.log").open("w")
        self.process = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={folder / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        wait_until(self.ready, timeout=30)

    def ready(self) -> bool:
        assert self.process.poll() is None, "prometheus exited (its log is in the tmp folder)"
        try:
            return httpx.get(f"{self.url}/-/ready", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def query(self, promql: str) -> list[dict[str, Any]]:
        body = httpx.post(f"{self.url}/api/v1/query", data={"query": promql}, timeout=10).json()
        assert body["status"] == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(15)
        self.log.close()


@contextmanager
def prometheus(
    folder: Path, targets: list[str], port: int | None = None
) -> Iterator[PrometheusServer]:
    """A running Prometheus scraping ``targets`` (skips the test where it is not installed)."""
    if shutil.which("prometheus") is None:
        pytest.skip("Debian's prometheus is not installed (scripts/bootstrap.sh installs it)")
    server = PrometheusServer(folder, targets, port)
    try:
        yield server
    finally:
        server.stop()
