"""Smoke: the service answers and the snapshot query runs."""

from __future__ import annotations

from tests.ops.conftest import Service


def test_health_and_metrics(service: Service) -> None:
    with service.client() as c:
        assert c.get("/healthz").json() == {"status": "ok"}
        r = c.get("/metrics")
        assert r.status_code == 200, r.text
        assert "pgmbus_up 1.0" in r.text, r.text
