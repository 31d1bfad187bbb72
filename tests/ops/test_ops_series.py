"""The samples behind the dashboard's charts: rates from totals, bounds, scopes over HTTP."""

from __future__ import annotations

import pytest

from pgmbus.errors import ConfigurationError
from pgmbus.http.samples import MAX_SAMPLES, Sample, Samples
from tests.ops.conftest import Service, start, wait_until


def _sample(at: float, depth: int, posted: int, consumed: int, dead: int) -> Sample:
    return Sample(at=at, queues={("q", "c"): (depth, posted, consumed, dead)})


def test_rates_are_differences_of_totals_over_the_time_between_samples() -> None:
    samples = Samples(every_s=2, window_s=60)
    samples.add(_sample(100.0, 5, 10, 5, 0))
    samples.add(_sample(102.0, 9, 16, 7, 1))
    samples.add(_sample(106.0, 1, 16, 15, 0))  # a dead message replayed: no negative rate
    [series] = samples.queue("q")
    assert series["consumer"] == "c"
    first, second, third = series["points"]
    assert first == {
        "at": 100.0,
        "depth": 5,
        "posted_per_s": None,
        "consumed_per_s": None,
        "dead_per_s": None,
    }
    assert (second["posted_per_s"], second["consumed_per_s"], second["dead_per_s"]) == (
        3.0,
        1.0,
        0.5,
    )
    assert (third["depth"], third["posted_per_s"], third["consumed_per_s"]) == (1, 0.0, 2.0)
    assert third["dead_per_s"] is None
    assert samples.queue("other") == []


def test_a_gap_in_an_objects_samples_starts_its_rates_again() -> None:
    samples = Samples(every_s=1, window_s=60)
    samples.add(_sample(1.0, 0, 10, 0, 0))
    samples.add(Sample(at=2.0))  # the queue was dropped
    samples.add(_sample(3.0, 0, 2, 0, 0))  # and made again: its totals start over
    [series] = samples.queue("q")
    assert [p["posted_per_s"] for p in series["points"]] == [None, None]


def test_the_ring_keeps_the_window_and_never_more_than_its_bound() -> None:
    samples = Samples(every_s=10, window_s=60)
    for i in range(20):
        samples.add(_sample(float(i), i, i, 0, 0))
    assert [p["depth"] for p in samples.queue("q")[0]["points"]] == list(range(13, 20))
    assert Samples(every_s=0.1, window_s=86400).ring.maxlen == MAX_SAMPLES


@pytest.mark.parametrize(("every", "window"), [(0, 60), (-1, 60), (float("nan"), 60), (10, 5)])
def test_bad_settings_are_refused(every: float, window: float) -> None:
    with pytest.raises(ConfigurationError):
        Samples(every_s=every, window_s=window)


def test_series_over_http_follow_the_keys_scopes(ops_dsn: str) -> None:
    base, stop = start(ops_dsn, sample_every_s=0.2)
    svc = Service(ops_dsn, base)
    try:
        svc.sql("SELECT mbus.create_queue('mail')")
        svc.sql("SELECT mbus.create_queue('orders')")
        svc.add_key("mailer", ["queues:read:mail"])
        svc.sql("SELECT mbus.post('mail', '{}') FROM generate_series(1, 4)")
        with svc.client("mailer") as http:

            def four() -> bool:
                r = http.get("/v1/ops/series/queues/mail")
                points = r.json()["consumers"][0]["points"] if r.json()["consumers"] else []
                return bool(points) and points[-1]["depth"] == 4

            wait_until(four, timeout=20)
            body = http.get("/v1/ops/series/queues/mail").json()
            assert body["every_s"] == 0.2 and body["window_s"] == 3600
            assert http.get("/v1/ops/series/queues/orders").status_code == 403
            assert http.get("/v1/ops/series/streams/any").status_code == 403
            assert http.get("/v1/ops/series/timers/someone").status_code == 403
            # its own timer client's series is always its own to read
            assert http.get("/v1/ops/series/timers/mailer").status_code == 200
        with svc.client(None) as anonymous:
            assert anonymous.get("/v1/ops/series/queues/mail").status_code == 401
    finally:
        stop()
