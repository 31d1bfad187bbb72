"""Which URLs the dispatcher may call."""

from __future__ import annotations

import pytest

from pgmbus.timers.netguard import NetworkGuard, RefusedURL, parse_networks
from tests.timers.conftest import run


@pytest.mark.parametrize(
    "url",
    [
        "ftp://8.8.8.8/x",
        "file:///etc/passwd",
        "http://127.0.0.1/",
        "http://10.1.2.3/",
        "http://192.168.0.1/",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/",
        "http://[fe80::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://0.0.0.0/",
        "http://224.0.0.1/",
        "http://localhost/",
    ],
)
def test_refused_by_default(url: str) -> None:
    with pytest.raises(RefusedURL):
        run(NetworkGuard().check(url))


def test_public_addresses_are_allowed_and_pinned() -> None:
    target = run(NetworkGuard().check("https://8.8.8.8:8443/x?y=1"))
    assert target.address == "8.8.8.8" and str(target.request_url) == "https://8.8.8.8:8443/x?y=1"


def test_allow_list_opens_exactly_its_networks() -> None:
    guard = NetworkGuard(parse_networks(["127.0.0.1/32", "10.0.0.0/8,fd00::/8"]))
    for url in ("http://127.0.0.1:8080/", "http://10.9.9.9/", "http://[fd00::5]/"):
        run(guard.check(url))
    with pytest.raises(RefusedURL):
        run(guard.check("http://127.0.0.2/"))
    with pytest.raises(ValueError):
        parse_networks(["not-a-cidr"])


def test_allow_list_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from pgmbus.timers.netguard import networks_from_env

    monkeypatch.setenv("PGMBUS_ALLOW_NETWORKS", "127.0.0.1/32, 10.0.0.0/8")
    guard = NetworkGuard(networks_from_env())
    run(guard.check("http://10.1.1.1/x"))
    with pytest.raises(RefusedURL):
        run(guard.check("http://192.168.1.1/x"))
