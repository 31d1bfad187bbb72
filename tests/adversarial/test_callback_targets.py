"""A timers callback target is a stranger's server: what its answer can make the dispatcher
hold is bounded. Real sockets on 127.0.0.1, the dispatcher's own HTTP/1.1 client."""

from __future__ import annotations

import asyncio
import ssl
import time

from pgmbus.timers.http11 import HTTPError, Origin, Pool

# far above any real response head, far below what hurts a dispatcher
BOUND = 4 << 20
REQUEST = b"POST /cb HTTP/1.1\r\nhost: t\r\ncontent-length: 0\r\n\r\n"


def answer_of(endless: bytes) -> tuple[Exception | None, float, int]:
    """Post once to a target that answers a status line then ``endless`` for ever; the error
    the call ended with (None for a response), its seconds, and the bytes the target sent."""
    sent = [0]

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\n")
        try:
            while True:
                writer.write(endless)
                sent[0] += len(endless)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def main() -> tuple[Exception | None, float]:
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = Pool(ssl.create_default_context())
        started = time.monotonic()
        try:
            async with asyncio.timeout(8):
                await pool.post(Origin("http", "127.0.0.1", port, "t"), REQUEST, b"")
        except (HTTPError, TimeoutError) as exc:
            return exc, time.monotonic() - started
        finally:
            pool.close()
            server.close()
        return None, time.monotonic() - started

    error, seconds = asyncio.run(main())
    return error, seconds, sent[0]


def test_a_target_answering_an_endless_header_value_is_cut_off_at_the_bound() -> None:
    # one header whose value never ends: the parser would grow it (by copies) until the timeout
    error, seconds, sent = answer_of(b"a" * 16384)
    assert isinstance(error, HTTPError) and "header" in str(error), error
    assert sent < BOUND, sent  # the connection went soon after the bound
    assert seconds < 5


def test_a_target_answering_endless_distinct_headers_is_cut_off_at_the_bound() -> None:
    # short headers of many names: each would stay in the response's dict
    error, seconds, sent = answer_of(b"".join(b"x-%d: v\r\n" % n for n in range(2000)))
    assert isinstance(error, HTTPError) and "header" in str(error), error
    assert sent < BOUND, sent
    assert seconds < 5
