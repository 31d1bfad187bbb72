"""The dispatcher's HTTP/1.1 client against real sockets on 127.0.0.1: keep-alive per target,
connections that close, bodies framed every way, bounded bodies, broken responses."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from pgmbus.timers.http11 import ConnectionClosed, HTTPError, Origin, Pool

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
HEAD = b"POST /cb HTTP/1.1\r\nhost: t\r\ncontent-length: 2\r\n\r\n"


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    return head + await reader.readexactly(length)


def run(handler: Handler, client: Callable[[Pool, Origin], Awaitable[None]]) -> list[int]:
    """Serve ``handler`` on 127.0.0.1, run ``client`` against it; the connections' numbers
    (one per accepted connection) in the order they came."""
    accepted: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(len(accepted) + 1)
        try:
            await handler(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = Pool(ssl.create_default_context(), max_body=1000)
        try:
            async with asyncio.timeout(10):
                await client(pool, Origin("http", "127.0.0.1", port, "t"))
        finally:
            pool.close()
            server.close()
            await server.wait_closed()

    asyncio.run(main())
    return accepted


def test_calls_to_one_target_share_a_kept_alive_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nX-A: b\r\n\r\nok")

    async def client(pool: Pool, origin: Origin) -> None:
        for _ in range(5):
            response = await pool.post(origin, HEAD, b"{}")
            assert (response.status_code, response.headers["x-a"], response.size) == (200, "b", 2)

    assert run(handler, client) == [1]


def test_a_connection_the_server_closed_is_not_used_again() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)  # answers one request, keep-alive, then closes
        writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        await writer.drain()

    async def client(pool: Pool, origin: Origin) -> None:
        for _ in range(3):
            assert (await pool.post(origin, HEAD, b"{}")).status_code == 204
            await asyncio.sleep(0.05)  # the close reaches the client

    assert run(handler, client) == [1, 2, 3]


def test_chunked_and_close_delimited_bodies_end_their_responses() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        await read_request(reader)  # the same connection: the chunked body ended it
        writer.write(b"HTTP/1.1 202 Accepted\r\nconnection: close\r\n\r\nuntil the end")
        await writer.drain()

    async def client(pool: Pool, origin: Origin) -> None:
        first = await pool.post(origin, HEAD, b"{}")
        second = await pool.post(origin, HEAD, b"{}")
        assert (first.status_code, first.size) == (200, 3)
        assert (second.status_code, second.size) == (202, len("until the end"))

    assert run(handler, client) == [1]


def test_a_body_past_the_bound_is_not_read_and_its_connection_not_kept() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 5000\r\n\r\n" + b"x" * 5000)

    async def client(pool: Pool, origin: Origin) -> None:
        for _ in range(2):
            response = await pool.post(origin, HEAD, b"{}")
            assert response.status_code == 200 and response.truncated

    assert run(handler, client) == [1, 2]


def test_no_answer_or_a_broken_one_is_an_error_and_the_connection_goes() -> None:
    answers = [b"", b"HTTP/1.1 abc\r\n\r\n", b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"]

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        answer = answers.pop(0)
        if answer:
            writer.write(answer)
            await writer.drain()
            await reader.read()  # the client closes it
        # nothing: the connection closes unanswered

    async def client(pool: Pool, origin: Origin) -> None:
        with pytest.raises(ConnectionClosed):
            await pool.post(origin, HEAD, b"{}")
        with pytest.raises(HTTPError, match="invalid HTTP response"):
            await pool.post(origin, HEAD, b"{}")
        assert (await pool.post(origin, HEAD, b"{}")).status_code == 200

    assert run(handler, client) == [1, 2, 3]


def test_a_call_cut_off_by_its_timeout_closes_its_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(1.0)  # late: the client gave up
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
        await writer.drain()
        while True:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")

    async def client(pool: Pool, origin: Origin) -> None:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await pool.post(origin, HEAD, b"{}")
        # the late answer must not be taken for the next call's: a new connection
        assert (await pool.post(origin, HEAD, b"{}")).status_code == 200

    assert run(handler, client) == [1, 2]


def test_https_checks_the_certificate_against_the_host_name_not_the_address(
    tmp_path: Path,
) -> None:
    # a self-signed certificate for a name, made by the openssl command (Debian's PostgreSQL
    # packages bring it, through ssl-cert)
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    name = ["-subj", "/CN=callbacks.test", "-addext", "subjectAltName=DNS:callbacks.test"]
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            *name,
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    client_tls = ssl.create_default_context(cafile=str(cert))

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            while True:
                await read_request(reader)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
        writer.close()

    async def main() -> None:
        server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_tls)
        port = server.sockets[0].getsockname()[1]
        pool = Pool(client_tls)
        try:
            async with asyncio.timeout(10):
                named = Origin("https", "127.0.0.1", port, "callbacks.test")
                assert (await pool.post(named, HEAD, b"{}")).status_code == 200
                other = Origin("https", "127.0.0.1", port, "other.test")
                with pytest.raises(ssl.SSLCertVerificationError):
                    await pool.post(other, HEAD, b"{}")
        finally:
            pool.close()
            server.close()
            await server.wait_closed()

    asyncio.run(main())


def test_an_upgrade_answer_ends_its_connection() -> None:
    upgrade = b"HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n"

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(upgrade + b"other protocol")
        await writer.drain()
        await reader.read()

    async def client(pool: Pool, origin: Origin) -> None:
        for _ in range(2):  # no 2xx (an error to the dispatcher), and never a reused connection
            assert (await pool.post(origin, HEAD, b"{}")).status_code == 101

    assert run(handler, client) == [1, 2]
