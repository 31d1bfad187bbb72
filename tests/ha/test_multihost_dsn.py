"""A multi-host DSN (every node, target_session_attrs=read-write) goes through pgmbus's DSN
handling unchanged: the DSN rule, the CLI's connect timeout and host check, the Celery
transport's URL both ways."""

from __future__ import annotations

import pytest
from psycopg.conninfo import conninfo_to_dict

from pgmbus.cli.common import check_hosts, with_connect_timeout
from pgmbus.contrib.kombu_transport import dsn_from_url, url_from_dsn
from pgmbus.dsn import resolve_dsn

MULTI = (
    "host=127.0.0.1,127.0.0.1 port=5433,5434 user=postgres dbname=pgmbus "
    "target_session_attrs=read-write"
)


def test_the_dsn_rule_keeps_every_host(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_dsn(MULTI) == MULTI
    monkeypatch.setenv("PGMBUS_DSN", MULTI)
    assert resolve_dsn() == MULTI


def test_the_cli_keeps_every_host_and_adds_a_timeout() -> None:
    given = conninfo_to_dict(with_connect_timeout(MULTI))
    assert given["host"] == "127.0.0.1,127.0.0.1" and given["port"] == "5433,5434"
    assert given["target_session_attrs"] == "read-write" and given["connect_timeout"]
    check_hosts(MULTI)  # two addresses: nothing to resolve, no error


def test_the_celery_url_carries_every_host_both_ways() -> None:
    url = url_from_dsn(MULTI)
    back = dsn_from_url(url)
    assert back is not None
    assert conninfo_to_dict(back) == conninfo_to_dict(MULTI)


@pytest.mark.parametrize(
    "url",
    [
        url_from_dsn(MULTI),  # the hosts and ports in the query string
        "pgmbus://postgres@127.0.0.1:5433,127.0.0.1:5434/pgmbus?target_session_attrs=read-write",
    ],
)
def test_kombu_hands_a_multi_host_url_to_the_transport_whole(url: str) -> None:
    """Kombu leaves the URL of a transport that parses its own (can_parse_url) as it is, so
    libpq gets every host, either form."""
    from kombu.connection import Connection

    dsn = dsn_from_url(Connection(url).hostname)
    assert dsn is not None
    given = conninfo_to_dict(dsn)
    assert given["host"] == "127.0.0.1,127.0.0.1" and given["port"] == "5433,5434"
    assert given["target_session_attrs"] == "read-write" and given["dbname"] == "pgmbus"
