"""Names reach Prometheus only as PromQL string literals: a name made of quotes, backslashes,
braces and PromQL cannot end its literal early and select other objects' series (real
Prometheus, real ``pgmbus serve``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from pgmbus.http.promseries import literal
from pgmbus.queues import Bus
from tests.ops.conftest import Service, free_port, start, wait_until
from tests.ops.prometheus import PrometheusServer, prometheus

NASTY = [
    'a"b',
    "back\\slash\\",
    '\\"} or vector(1) or {x="',
    "line\nbreak\ttab\r\x00\x1f\x7f",
    "unicode é ß 中 😀 \u2028",
    "",
]
# each starts with "mail" so that a key allowed queues:read:mail* passes the scope check
INJECTIONS = [
    'mail"} or pgmbus_queue_depth{queue="secret',
    'mail\\"} or pgmbus_queue_depth{queue="secret',
    'mail",queue=~".+',
    "mail\\",
]


@pytest.fixture
def empty_prometheus(tmp_path: Path) -> Iterator[PrometheusServer]:
    with prometheus(tmp_path, []) as prom:
        yield prom


@pytest.mark.parametrize("name", NASTY)
def test_a_literal_reads_back_as_exactly_the_name(
    empty_prometheus: PrometheusServer, name: str
) -> None:
    [series] = empty_prometheus.query(f'label_replace(vector(1), "x", {literal(name)}, "", "")')
    assert series["metric"].get("x", "") == name


def test_a_crafted_name_selects_no_other_objects_series(db_dsn: str, tmp_path: Path) -> None:
    prom_port = free_port()
    base, stop = start(db_dsn, prometheus_url=f"http://127.0.0.1:{prom_port}")
    svc = Service(db_dsn, base)
    try:
        with Bus(db_dsn) as bus:
            bus.create_queue("mail")
            bus.create_queue("secret")
            bus.post_batch("secret", [{"n": i} for i in range(7)])
        svc.add_key("mailer", ["queues:read:mail*"])
        with (
            prometheus(tmp_path, [base.removeprefix("http://")], prom_port) as prom,
            svc.client("mailer") as http,
        ):
            wait_until(lambda: len(prom.query('pgmbus_queue_depth{queue="secret"} == 7')) == 1)
            assert http.get("/v1/ops/series/queues/secret").status_code == 403
            for name in INJECTIONS:
                r = http.get(f"/v1/ops/series/queues/{quote(name, safe='')}")
                assert r.status_code == 200, name
                # answered by Prometheus (the query parsed), about no queue of that name
                assert (r.json()["source"], r.json()["consumers"]) == ("prometheus", []), name

            def mail_drawn() -> bool:
                body = http.get("/v1/ops/series/queues/mail").json()
                return body["source"] == "prometheus" and bool(body["consumers"])

            wait_until(mail_drawn)  # the real queue is drawn, from the same Prometheus
    finally:
        stop()
