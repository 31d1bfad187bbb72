"""The chart series read from a real Prometheus scraping the service's /metrics, and the
fall back to the service's own samples when Prometheus does not answer."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import psycopg
import pytest

from pgmbus import streams
from pgmbus.errors import ConfigurationError
from pgmbus.http import ServiceConfig
from pgmbus.http.promseries import STEP_S, WINDOW_S
from pgmbus.queues import Bus
from tests.ops.conftest import Service, free_port, start, wait_until
from tests.ops.prometheus import PrometheusServer, prometheus
from tests.ops.serve_process import serve

RATE_WINDOW_S = 30


def scraped(prom: PrometheusServer, promql: str, value: float) -> bool:
    """Prometheus holds ``value`` as the latest sample of ``promql``'s one series."""
    found = prom.query(promql)
    return len(found) == 1 and float(found[0]["value"][1]) == value


def test_charts_come_from_prometheus_and_fall_back_to_the_samples(
    ops_dsn: str, tmp_path: Path
) -> None:
    prom_port = free_port()
    base, stop = start(
        ops_dsn,
        sample_every_s=0.2,
        prometheus_url=f"http://127.0.0.1:{prom_port}/",
        prometheus_rate_window_s=RATE_WINDOW_S,
    )
    svc = Service(ops_dsn, base)
    try:
        with Bus(ops_dsn) as bus:
            bus.create_queue("mail")
            bus.create_queue("orders")
        with psycopg.connect(ops_dsn, autocommit=True) as conn:
            streams.create_group(conn, "search", start="now", slots=2)
        svc.add_key("mailer", ["queues:read:mail", "streams:read:search"])
        with (
            prometheus(tmp_path, [base.removeprefix("http://")], prom_port) as prom,
            svc.client("mailer") as http,
        ):
            # a few scrapes of the empty queue first: rate() extrapolates an increase over the
            # time its samples span, by up to half a scrape interval at the window's end, which
            # on a series a second old would double it
            wait_until(
                lambda: scraped(
                    prom,
                    'count_over_time(pgmbus_queue_consumer_posted_total{queue="mail"}[1m]) >= 4'
                    ' and pgmbus_queue_consumer_posted_total{queue="mail"} == 0',
                    4,
                ),
                timeout=20,
            )
            with Bus(ops_dsn) as bus:
                bus.post_batch("mail", [{"n": i} for i in range(30)])
                consumed = bus.consume("mail", limit=10)
            assert len(consumed) == 10
            with psycopg.connect(ops_dsn, autocommit=True) as conn:
                streams.publish_batch(conn, "orders.created", [{"n": i} for i in range(4)])
            wait_until(
                lambda: (
                    scraped(prom, 'pgmbus_queue_consumer_consumed_total{queue="mail"}', 10)
                    and scraped(prom, 'pgmbus_queue_depth{queue="mail"}', 20)
                    and scraped(prom, 'sum(pgmbus_stream_group_pending_events{group="search"})', 4)
                ),
                timeout=15,
            )
            # a scrape slower than its 1 s timeout (a loaded machine) leaves the gauges stale
            # (no value) at the latest point for a moment: ask until it has them
            answers: list[dict[str, Any]] = []

            def drawn() -> bool:
                answers.append(http.get("/v1/ops/series/queues/mail").json())
                points = answers[-1]["consumers"][0]["points"] if answers[-1]["consumers"] else []
                return bool(points) and points[-1]["depth"] == 20

            wait_until(drawn, timeout=15)
            body = answers[-1]
            assert body["source"] == "prometheus"
            assert (body["every_s"], body["window_s"]) == (STEP_S, WINDOW_S)
            assert body["rate_window_s"] == RATE_WINDOW_S
            [series] = body["consumers"]
            assert series["consumer"] == "default"
            assert 0 < len(series["points"]) <= 241
            last = series["points"][-1]
            # 30 posted and 10 consumed inside the last rate window: rate() is the increase
            # over the window (Prometheus extrapolates it a little past the scrapes)
            assert 30 * 0.7 <= last["posted_per_s"] * RATE_WINDOW_S <= 30 * 1.5
            assert 10 * 0.7 <= last["consumed_per_s"] * RATE_WINDOW_S <= 10 * 1.5
            assert last["dead_per_s"] == 0

            def slots_drawn() -> bool:
                answers.append(http.get("/v1/ops/series/streams/search").json())
                slots = answers[-1]["slots"]
                unread = [s["points"][-1]["unread"] for s in slots]
                return len(slots) == 2 and None not in unread and sum(unread) == 4

            wait_until(slots_drawn, timeout=15)
            assert answers[-1]["source"] == "prometheus"
            assert [s["slot"] for s in answers[-1]["slots"]] == [0, 1]
            # the key's scopes hold whatever the source
            assert http.get("/v1/ops/series/queues/orders").status_code == 403
            assert http.get("/v1/ops/series/streams/other").status_code == 403
            # timer clients have no series in /metrics: their chart stays on the samples
            assert http.get("/v1/ops/series/timers/mailer").json()["source"] == "samples"

            prom.stop()
            fallback = http.get("/v1/ops/series/queues/mail")
            assert fallback.status_code == 200
            body = fallback.json()
            assert body["source"] == "samples"
            assert "Prometheus did not answer" in body["prometheus_error"]
            assert body["every_s"] == 0.2
            assert body["consumers"][0]["points"][-1]["depth"] == 20
            slots = http.get("/v1/ops/series/streams/search").json()
            assert slots["source"] == "samples" and slots["prometheus_error"]
    finally:
        stop()


def test_without_prometheus_the_charts_say_they_come_from_the_samples(service: Service) -> None:
    service.sql("SELECT mbus.create_queue('mail')")
    with service.client() as http:
        body = http.get("/v1/ops/series/queues/mail").json()
    assert body["source"] == "samples" and "prometheus_error" not in body


@pytest.mark.parametrize(
    ("url", "timeout"),
    [("prometheus:9090", 5.0), ("ftp://host/", 5.0), ("http://", 5.0), ("http://h", 0.0)],
)
def test_a_bad_prometheus_setting_is_refused(url: str, timeout: float) -> None:
    with pytest.raises(ConfigurationError):
        ServiceConfig(dsn="", prometheus_url=url, prometheus_timeout_s=timeout)


def test_the_prometheus_url_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGMBUS_PROMETHEUS_URL", "http://prom.internal:9090")
    monkeypatch.setenv("PGMBUS_PROMETHEUS_RATE_WINDOW_S", "60")
    config = ServiceConfig(dsn="")
    assert (config.prometheus_url, config.prometheus_rate_window_s) == (
        "http://prom.internal:9090",
        60,
    )
    monkeypatch.setenv("PGMBUS_PROMETHEUS_URL", "not a url")
    with pytest.raises(ConfigurationError):
        ServiceConfig(dsn="")


class Misbehaving(BaseHTTPRequestHandler):
    """A server where Prometheus should be that answers what ``answer`` holds, or nothing."""

    answer: ClassVar[list[tuple[int, bytes]]] = [(503, b"overloaded")]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        status, body = self.answer[0]
        if status == 0:  # hang past the service's timeout
            time.sleep(2)
            return
        self.send_response(status)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_prometheus_that_errs_or_hangs_leaves_the_charts_on_the_samples(ops_dsn: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Misbehaving)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base, stop = start(
        ops_dsn,
        sample_every_s=0.2,
        prometheus_url=f"http://127.0.0.1:{server.server_address[1]}",
        prometheus_timeout_s=0.5,
    )
    svc = Service(ops_dsn, base)
    matrix: dict[str, Any] = {"status": "success", "data": {"resultType": "matrix"}}
    cases = [
        ((503, b"overloaded"), "Prometheus answered HTTP 503"),
        ((200, b"<html>not json</html>"), "Prometheus answered HTTP 200"),
        ((400, b'{"status":"error","errorType":"bad_data"}'), "Prometheus answered HTTP 400"),
        ((200, b'{"status":"error","errorType":"execution"}'), "Prometheus answered execution"),
        ((200, json.dumps(matrix).encode()), "Prometheus answered no range of series"),
        (
            (200, json.dumps({**matrix, "data": {**matrix["data"], "result": [{}]}}).encode()),
            "Prometheus answered series of an unexpected shape",
        ),
        ((0, b""), "Prometheus did not answer (ReadTimeout)"),
    ]
    try:
        svc.sql("SELECT mbus.create_queue('mail')")
        svc.sql("SELECT mbus.post('mail', '{}') FROM generate_series(1, 3)")
        svc.add_key("mailer", ["queues:read:mail"])
        with svc.client("mailer") as http:
            wait_until(lambda: bool(http.get("/v1/ops/series/queues/mail").json()["consumers"]))
            for answer, reason in cases:
                Misbehaving.answer[:] = [answer]
                r = http.get("/v1/ops/series/queues/mail")
                assert r.status_code == 200, reason
                body = r.json()
                assert (body["source"], body["prometheus_error"]) == ("samples", reason)
                assert body["consumers"][0]["points"][-1]["depth"] == 3
    finally:
        stop()
        server.shutdown()
        server.server_close()


@pytest.mark.slow  # a real pgmbus serve process: its start costs many seconds under load
def test_serve_takes_the_prometheus_url_from_its_option(ops_dsn: str) -> None:
    nobody = f"http://127.0.0.1:{free_port()}"
    with serve(ops_dsn, "--prometheus-url", nobody) as base:
        svc = Service(ops_dsn, base)
        svc.add_key("mailer", ["queues:read:mail"])
        with svc.client("mailer") as http:
            body = http.get("/v1/ops/series/queues/mail").json()
        assert body["source"] == "samples"
        assert body["prometheus_error"] == "Prometheus did not answer (ConnectError)"
