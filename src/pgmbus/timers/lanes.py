"""Due callbacks waiting for an HTTP worker, in one lane per client and target host.

Workers take callbacks in turns over the clients (and, within a client, over its hosts), and
never start a call for a client that has ``per_client`` calls in flight or for a host that has
``per_host``: a client whose endpoint hangs, or with a large backlog, holds at most that many
workers, and the others keep calling. Within a lane callbacks go in the order they came (by
run_at).

Those bounds alone let a few hosts that hang hold every slot together (two hosts at half the
slots each). So a call still in flight after ``stall_after_s`` is *stalled*: it gives its slot
back and waits in a separate budget of ``stalled`` calls (a hung call costs a socket, not CPU).
New calls start only while fewer than ``slots`` calls are in flight and not stalled; while the
stalled budget is full, hosts with a stalled call start none. Hosts that hang, however many,
hold a slot for ``stall_after_s`` at most per call.
"""

from __future__ import annotations

import asyncio
import functools
from collections import Counter, OrderedDict, deque
from typing import TypeVar
from urllib.parse import urlsplit

from pgmbus.timers.delivery import Claimed

T = TypeVar("T")


@functools.lru_cache(maxsize=4096)  # a callback's host is looked up at each turn
def host_of(url: str) -> str:
    """The target a callback's calls go to: host and port (lower case)."""
    try:
        parts = urlsplit(url)
        return f"{(parts.hostname or '').lower()}:{parts.port or ''}"
    except ValueError:  # a bad port: its call fails at once, it holds nothing for long
        return url


def _decrement(counts: Counter[T], key: T) -> None:
    """One less; a key with none is forgotten (hosts come and go)."""
    counts[key] -= 1
    if counts[key] <= 0:
        del counts[key]


class Lanes:
    """A fair queue of due callbacks with bounds on the calls in flight per client and host."""

    def __init__(
        self,
        per_client: int,
        per_host: int,
        *,
        slots: int | None = None,
        stall_after_s: float = 1.0,
        stalled: int = 0,
    ) -> None:
        self.per_client = max(1, per_client)
        self.per_host = max(1, per_host)
        self.slots = slots  # calls in flight and not stalled, at most (None: no bound)
        self.stall_after_s = stall_after_s
        self.stalled_max = stalled
        self._active = 0  # calls in flight, not stalled
        self._stalled = 0
        self._stalled_hosts: Counter[str] = Counter()
        # calls in flight: (callback id, attempt) -> (host, stalled, timer that stalls it)
        self._flight: dict[tuple[int, int], tuple[str, bool, asyncio.TimerHandle | None]] = {}
        # client id -> host -> callbacks; both in turn order (the next one first)
        self._lanes: OrderedDict[int, OrderedDict[str, deque[Claimed]]] = OrderedDict()
        self._size = 0
        self._queued: Counter[int] = Counter()  # callbacks waiting, by client
        self._clients: Counter[int] = Counter()  # calls in flight
        self._hosts: Counter[str] = Counter()
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._closed = False

    def in_flight(self) -> tuple[dict[int, int], dict[str, int]]:
        """Calls in flight by client and by host (those with any)."""
        return dict(self._clients), dict(self._hosts)

    def stalled(self) -> int:
        """Calls in flight past ``stall_after_s`` that gave their slot back."""
        return self._stalled

    def qsize(self) -> int:
        """Callbacks waiting in all lanes."""
        return self._size

    def queued(self) -> dict[int, int]:
        """Callbacks waiting, by client (those with any)."""
        return dict(self._queued)

    def runnable(self) -> int:
        """Callbacks waiting in lanes whose client and host can start a call now."""
        count = 0
        for client, hosts in self._lanes.items():
            if self._clients[client] < self.per_client:
                count += sum(len(q) for h, q in hosts.items() if self._startable(h))
        return count

    def _startable(self, host: str) -> bool:
        if self._hosts[host] >= self.per_host:
            return False
        # a host with a stalled call waits while the stalled budget is full: its next call
        # would likely hang too, and keep a slot once it could not move out
        return not (self._stalled >= self.stalled_max and host in self._stalled_hosts)

    def put(self, cb: Claimed) -> None:
        hosts = self._lanes.setdefault(cb.client_id, OrderedDict())
        hosts.setdefault(host_of(cb.url), deque()).append(cb)
        self._size += 1
        self._queued[cb.client_id] += 1
        self._wake()

    async def get(self) -> Claimed | None:
        """The next callback whose client and host are below their bounds (its call counts
        as in flight until :meth:`done`); None once closed."""
        while not self._closed:
            cb = self._pick()
            if cb is not None:
                if self._waiters and self._size:
                    # one put or done wakes one waiter: pass the turn on while callbacks wait
                    # (a waiter that finds none runnable waits again)
                    self._wake()
                return cb
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if not waiter.done():
                    waiter.cancel()
                    if waiter in self._waiters:
                        self._waiters.remove(waiter)
        return None

    def done(self, cb: Claimed) -> None:
        """The call of a callback taken with :meth:`get` is over (or never started)."""
        host, stalled, timer = self._flight.pop((cb.id, cb.attempt))
        if timer is not None:
            timer.cancel()
        if stalled:
            self._stalled -= 1
            _decrement(self._stalled_hosts, host)
        else:
            self._active -= 1
        _decrement(self._clients, cb.client_id)
        _decrement(self._hosts, host)
        self._wake()

    def _stall(self, key: tuple[int, int]) -> None:
        """A call is still in flight after ``stall_after_s``: it gives its slot back, if the
        stalled budget has room (else it keeps the slot until it ends)."""
        flight = self._flight.get(key)
        if flight is None or self._stalled >= self.stalled_max:
            return
        host = flight[0]
        self._flight[key] = (host, True, None)
        self._active -= 1
        self._stalled += 1
        self._stalled_hosts[host] += 1
        self._wake()

    def close(self) -> None:
        """Make every :meth:`get` return None."""
        self._closed = True
        while self._waiters:
            self._wake()

    def drain(self) -> list[Claimed]:
        """Take every waiting callback out (to give back)."""
        out = [cb for hosts in self._lanes.values() for q in hosts.values() for cb in q]
        self._lanes.clear()
        self._size = 0
        self._queued.clear()
        return out

    def _pick(self) -> Claimed | None:
        if self.slots is not None and self._active >= self.slots:
            return None
        for client, hosts in self._lanes.items():
            if self._clients[client] >= self.per_client:
                continue
            for host, queue in hosts.items():
                if not self._startable(host):
                    continue
                cb = queue.popleft()
                self._size -= 1
                _decrement(self._queued, client)
                self._clients[client] += 1
                self._hosts[host] += 1
                self._active += 1
                key = (cb.id, cb.attempt)
                timer = None
                if self.stalled_max > 0:
                    loop = asyncio.get_running_loop()
                    timer = loop.call_later(self.stall_after_s, self._stall, key)
                self._flight[key] = (host, False, timer)
                # the next turn goes to the other hosts and clients first
                if queue:
                    hosts.move_to_end(host)
                else:
                    del hosts[host]
                if hosts:
                    self._lanes.move_to_end(client)
                else:
                    del self._lanes[client]
                return cb
        return None

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
