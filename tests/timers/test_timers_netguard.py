"""Which URLs the dispatcher may call."""

from __future__ import annotations

import asyncio
import ipaddress
import time

import pytest

from pgmbus.timers.netguard import (
    IPAddress,
    NetworkGuard,
    RefusedURL,
    Target,
    UnresolvableHost,
    _resolve,
    embedded_ipv4,
    parse_networks,
)
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


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://xn--a.example/", "invalid host name 'xn--a.example'"),  # bad IDNA label
        ("http://a..b/", "invalid host name 'a..b'"),  # empty label: getaddrinfo can't encode it
        (f"http://{'a' * 64}.com/", "invalid host name"),  # a label over 63 bytes
        ("http://127.0.0.1:99999/", "invalid port 99999"),  # parsed, but no socket takes it
        ("http://127.0.0.1:0/", "invalid port 0"),
    ],
)
def test_a_url_that_cannot_be_encoded_or_connected_is_refused(url: str, reason: str) -> None:
    # these escaped the guard as UnicodeError (or reached the socket); allow-listing the
    # address does not open them
    with pytest.raises(RefusedURL, match="^" + reason) as caught:
        run(NetworkGuard(parse_networks(["127.0.0.1/32"])).check(url))
    assert not isinstance(caught.value, UnresolvableHost)  # refused for good, not "not yet"


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


# Every IPv6 form that embeds an IPv4 address, with each kind of non-public IPv4 inside.
_PRIVATE_V4 = ["127.0.0.1", "10.1.2.3", "169.254.169.254", "192.168.0.1"]


def _nat64(v4: str) -> str:
    return str(
        ipaddress.IPv6Address(
            int(ipaddress.IPv6Address("64:ff9b::")) | int(ipaddress.IPv4Address(v4))
        )
    )


def _compat(v4: str) -> str:
    return str(ipaddress.IPv6Address(int(ipaddress.IPv4Address(v4))))


def _mapped(v4: str) -> str:
    return f"::ffff:{v4}"


def _sixtofour(v4: str) -> str:
    return str(ipaddress.IPv6Address((0x2002 << 112) | (int(ipaddress.IPv4Address(v4)) << 80) | 1))


def _teredo_client(v4: str) -> str:
    # server 8.8.8.8 (public), client obfuscated (bit-inverted) in the low 32 bits
    client = int(ipaddress.IPv4Address(v4)) ^ 0xFFFFFFFF
    server = int(ipaddress.IPv4Address("8.8.8.8"))
    return str(ipaddress.IPv6Address((0x20010000 << 96) | (server << 64) | client))


def _teredo_server(v4: str) -> str:
    client = int(ipaddress.IPv4Address("8.8.8.8")) ^ 0xFFFFFFFF
    server = int(ipaddress.IPv4Address(v4))
    return str(ipaddress.IPv6Address((0x20010000 << 96) | (server << 64) | client))


_FORMS = {
    "nat64": _nat64,
    "compat": _compat,
    "mapped": _mapped,
    "6to4": _sixtofour,
    "teredo-client": _teredo_client,
    "teredo-server": _teredo_server,
}


@pytest.mark.parametrize("v4", _PRIVATE_V4)
@pytest.mark.parametrize("form", sorted(_FORMS))
def test_ipv6_forms_embedding_private_ipv4_are_refused(form: str, v4: str) -> None:
    address = _FORMS[form](v4)
    assert ipaddress.IPv4Address(v4) in embedded_ipv4(ipaddress.IPv6Address(address))
    with pytest.raises(RefusedURL, match="not public"):
        run(NetworkGuard().check(f"http://[{address}]:8080/hook"))
    # an allow-listed IPv4 network does not open the IPv6 forms that embed it
    # (the mapped form is the IPv4 address itself: the socket connects to it)
    opened = NetworkGuard(parse_networks([f"{v4}/32"]))
    if form == "mapped":
        run(opened.check(f"http://[{address}]:8080/hook"))
    else:
        with pytest.raises(RefusedURL):
            run(opened.check(f"http://[{address}]:8080/hook"))


@pytest.mark.parametrize(
    "address",
    ["64:ff9b:1::7f00:1", "64:ff9b:1:7f00:1::", "64:ff9b:1::808:808"],
)
def test_local_use_nat64_is_refused(address: str) -> None:
    with pytest.raises(RefusedURL):
        run(NetworkGuard().check(f"http://[{address}]/"))


@pytest.mark.parametrize(
    "address",
    [
        _nat64("8.8.8.8"),
        _sixtofour("8.8.8.8"),
        _compat("1.1.1.1"),
        _mapped("9.9.9.9"),
        "2606:4700:4700::1111",
        "2001:4860:4860::8888",
    ],
)
def test_ipv6_forms_embedding_public_ipv4_are_allowed(address: str) -> None:
    # classification only: check() resolves nothing for a literal and sends no traffic
    target = run(NetworkGuard().check(f"https://[{address}]/x"))
    assert ipaddress.ip_address(target.address) == ipaddress.ip_address(address)


def test_an_allow_listed_ipv6_network_is_allowed_whatever_it_embeds() -> None:
    guard = NetworkGuard(parse_networks(["64:ff9b::/96"]))
    run(guard.check(f"http://[{_nat64('127.0.0.1')}]/"))


class CountingResolver:
    """The system resolver, counting its lookups."""

    def __init__(self) -> None:
        self.lookups = 0

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.lookups += 1
        return await _resolve(host, port)


async def _check_all(guard: NetworkGuard, urls: list[str]) -> list[object]:
    return await asyncio.gather(*(guard.check(u) for u in urls), return_exceptions=True)


def test_concurrent_checks_of_one_host_share_one_lookup() -> None:
    """A burst of creates naming one callback host resolves it once (a resolver that drops
    concurrent queries stalled such bursts for its 5 s timeout), and the answer is kept."""
    resolver = CountingResolver()
    guard = NetworkGuard(parse_networks(["127.0.0.0/8", "::1/128"]), resolver=resolver)
    got = run(_check_all(guard, [f"http://localhost:8080/hook/{i}" for i in range(40)]))
    assert resolver.lookups == 1
    for target in got:
        assert isinstance(target, Target), target
        assert target.address in {"127.0.0.1", "::1"}
    run(guard.check("http://localhost:8080/other"))
    assert resolver.lookups == 1


def test_a_host_without_address_is_looked_up_once_per_burst_and_again_later() -> None:
    """An unresolvable host fails every check of the burst from one lookup, the failure is
    kept cache_s seconds (DNS may answer later: then it is asked again)."""
    resolver = CountingResolver()
    guard = NetworkGuard(cache_s=0.2, resolver=resolver)
    urls = [f"https://pgmbus-no-such-host.invalid/{i}" for i in range(40)]
    got = run(_check_all(guard, urls))
    assert all(isinstance(g, UnresolvableHost) for g in got), got
    assert resolver.lookups == 1
    with pytest.raises(UnresolvableHost):
        run(guard.check(urls[0]))
    assert resolver.lookups == 1
    time.sleep(0.25)
    with pytest.raises(UnresolvableHost):
        run(guard.check(urls[0]))
    assert resolver.lookups == 2


def test_a_cancelled_check_leaves_the_shared_lookup_to_the_others() -> None:
    resolver = CountingResolver()
    guard = NetworkGuard(parse_networks(["127.0.0.0/8", "::1/128"]), resolver=resolver)

    async def burst() -> list[object]:
        first = asyncio.ensure_future(guard.check("http://localhost:9/a"))
        others = [asyncio.ensure_future(guard.check(f"http://localhost:9/{i}")) for i in range(5)]
        await asyncio.sleep(0)
        first.cancel()
        return await asyncio.gather(*others)

    got = run(burst())
    assert len(got) == 5 and resolver.lookups == 1
