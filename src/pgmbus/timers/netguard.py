"""Which callback URLs may be called: http(s) only, public addresses unless allow-listed.

A callback URL is user input that the dispatcher calls from inside the operator's network, so
private, loopback, link-local, multicast and reserved addresses are refused unless an operator
allow-lists them (``--allow-network CIDR`` or ``PGMBUS_ALLOW_NETWORKS``). An IPv6 address that
embeds an IPv4 address (IPv4-mapped ``::ffff:0:0/96``, IPv4-compatible ``::/96``, NAT64
``64:ff9b::/96``, 6to4 ``2002::/16``, Teredo ``2001::/32``) is judged by what it embeds as well:
every embedded IPv4 address must be public (``64:ff9b:1::/48``, local-use NAT64 whose embedding
depends on the operator's prefix, is refused outright). The host is resolved
once and the request is sent to the address that was checked (the URL keeps its host name for
the ``Host`` header and TLS), so a DNS answer that changes between check and call cannot
redirect the call into a refused network. A URL that cannot be parsed, whose host name cannot
be encoded for DNS, or whose port is beyond 1-65535 is refused too: a refusal, never a crash.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import os
import socket
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
#: Resolves a host and port to its addresses; raises UnresolvableHost when it has none now.
Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]

ENV_ALLOW = "PGMBUS_ALLOW_NETWORKS"


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_COMPAT = ipaddress.IPv6Network("::/96")


class RefusedURL(Exception):
    """The URL may not be called (scheme, host or address refused)."""


class UnresolvableHost(RefusedURL):
    """The URL's host name has no address now (DNS may answer later)."""


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (NAT64, compatible, mapped, 6to4, Teredo).

    Teredo gives two: its server and its (de-obfuscated) client. The ``::`` and ``::1``
    addresses embed nothing.
    """
    found: list[ipaddress.IPv4Address] = []
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _NAT64 or (address in _COMPAT and int(address) > 1):
        found.append(low32)
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    return found


@dataclass(frozen=True)
class Target:
    """A checked URL: the address to connect to and the original host name."""

    url: httpx.URL
    address: str
    host: str

    @functools.cached_property
    def request_url(self) -> httpx.URL:
        """The URL with its host replaced by the checked address."""
        return self.url.copy_with(host=self.address)

    @functools.cached_property
    def host_header(self) -> str:
        """The ``Host`` header: the URL's host name (and port)."""
        return self.url.netloc.decode("ascii")


def parse_networks(values: Iterable[str]) -> list[IPNetwork]:
    """Parse CIDRs (``127.0.0.1/32``, ``10.0.0.0/8``, ``::1/128``); raises ``ValueError``."""
    networks: list[IPNetwork] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if part:
                networks.append(ipaddress.ip_network(part, strict=False))
    return networks


def networks_from_env() -> list[IPNetwork]:
    """The networks allow-listed by ``PGMBUS_ALLOW_NETWORKS`` (comma-separated CIDRs)."""
    return parse_networks([os.environ.get(ENV_ALLOW, "")])


class NetworkGuard:
    """Check callback URLs against the public-only rule and an allow list.

    Parameters
    ----------
    allow:
        Networks that may be called even though they are not public (e.g. ``127.0.0.1/32``).
    cache_s:
        How long a host's lookup (with or without addresses) is kept.
    resolver:
        How hosts are resolved (default: the system's ``getaddrinfo``).
    """

    def __init__(
        self,
        allow: Iterable[IPNetwork] = (),
        cache_s: float = 5.0,
        resolver: Resolver | None = None,
    ) -> None:
        self.allow = list(allow)
        self.cache_s = cache_s
        self._resolver = resolver or _resolve
        # (host, port) -> (until, its addresses or why it has none): lookups are remembered
        # cache_s seconds, failed ones too. A burst of creates naming one callback host made
        # one lookup each, and a resolver that drops concurrent queries stalled them 5 s.
        self._lookups: dict[tuple[str, int], tuple[float, list[IPAddress] | str]] = {}
        # lookups in flight per event loop: the checks of one host share one
        self._inflight: dict[
            tuple[asyncio.AbstractEventLoop, str, int], asyncio.Task[list[IPAddress] | str]
        ] = {}

    def address_allowed(self, address: IPAddress) -> bool:
        """True when ``address`` is public or inside an allow-listed network.

        An IPv4-mapped address is judged as its IPv4 address (it is what the socket connects
        to). Another IPv6 address that embeds IPv4 addresses is allowed only when it is
        allow-listed itself, or public with every embedded IPv4 address public (an allow-listed
        IPv4 network does not open the IPv6 forms that embed it).
        """
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if any(address.version == n.version and address in n for n in self.allow):
            return True
        if not address.is_global or address.is_multicast:
            return False
        if isinstance(address, ipaddress.IPv6Address):
            if address in _NAT64_LOCAL:
                return False
            return all(v4.is_global and not v4.is_multicast for v4 in embedded_ipv4(address))
        return True

    async def check(self, url: str | httpx.URL) -> Target:
        """Resolve and check ``url``; return the target to call or raise ``RefusedURL``.

        Resolutions are shared: the concurrent checks of one host wait for one lookup, whose
        answer (no address included) is remembered for ``cache_s`` seconds; the rules are
        applied to it on every check.
        """
        # a callback's URL is checked on every call: its parse is remembered (the rules and
        # the lookup's answer are applied each time)
        parsed, host, port, literal = _parse(url) if isinstance(url, str) else _parse_url(url)
        addresses = [literal] if literal is not None else await self._addresses(host, port)
        if not addresses:
            raise UnresolvableHost(f"host {host!r} has no address")
        for address in addresses:
            if not self.address_allowed(address):
                inner = ""
                if isinstance(address, ipaddress.IPv6Address) and embedded_ipv4(address):
                    inner = " (it embeds " + ", ".join(map(str, embedded_ipv4(address))) + ")"
                raise RefusedURL(
                    f"address {address} of host {host!r}{inner} is not public and not allow-listed"
                )
        return Target(parsed, str(addresses[0]), host)

    async def _addresses(self, host: str, port: int) -> list[IPAddress]:
        """The addresses of ``host``: remembered, or from the lookup in flight, or a new one."""
        key = (host, port)
        known = self._lookups.get(key)
        if known is None or known[0] <= time.monotonic():
            loop = asyncio.get_running_loop()
            flight = self._inflight.get((loop, host, port))
            if flight is None:
                flight = loop.create_task(self._lookup(host, port))
                self._inflight[(loop, host, port)] = flight
                flight.add_done_callback(lambda _: self._inflight.pop((loop, host, port), None))
            # shielded: a caller that gives up (a request cancelled) leaves the lookup to others
            answer = await asyncio.shield(flight)
        else:
            answer = known[1]
        if isinstance(answer, str):
            raise UnresolvableHost(answer)
        return answer

    async def _lookup(self, host: str, port: int) -> list[IPAddress] | str:
        """Resolve ``host`` and remember the answer: its addresses, or why it has none."""
        answer: list[IPAddress] | str
        try:
            answer = await self._resolver(host, port)
        except UnresolvableHost as exc:
            answer = str(exc)
        if len(self._lookups) >= 10_000:
            self._lookups.clear()
        self._lookups[(host, port)] = (time.monotonic() + self.cache_s, answer)
        return answer


def _parse_url(url: str | httpx.URL) -> tuple[httpx.URL, str, int, IPAddress | None]:
    """A URL's parse, host name, port and address (when the host is one); ``RefusedURL``
    when it can never be called."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise RefusedURL(f"invalid URL: {exc}") from exc
    if parsed.scheme not in ("http", "https"):
        raise RefusedURL(f"scheme {parsed.scheme!r} refused: only http and https")
    try:
        # .host decodes IDNA (idna.IDNAError, a UnicodeError, for a bad "xn--" label) and
        # getaddrinfo encodes it with the "idna" codec (UnicodeError for an empty or
        # over-63-byte label): a name that fails either can never be called
        host = parsed.host
        host.encode("idna")
    except UnicodeError as exc:
        name = parsed.raw_host.decode("ascii", "replace")
        raise RefusedURL(f"invalid host name {name!r}: {exc}") from exc
    if not host:
        raise RefusedURL("URL has no host")
    port = (443 if parsed.scheme == "https" else 80) if parsed.port is None else parsed.port
    if not 0 < port < 65536:  # httpx parses any number; a socket cannot connect to it
        raise RefusedURL(f"invalid port {port}")
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    return parsed, host, port, literal


_parse = functools.lru_cache(maxsize=4096)(_parse_url)


async def _resolve(host: str, port: int) -> list[IPAddress]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, ValueError) as exc:  # gaierror, or a name the idna codec cannot encode
        raise UnresolvableHost(f"cannot resolve {host!r}: {exc}") from exc
    seen: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if address not in seen:
            seen.append(address)
    return seen
