"""HTTP workloads of the chaos suite: clients of `pgmbus serve` posting, leasing and acking.

The producer posts through the service with a client-given iid and retries an unknown outcome
(a 5xx, a timeout, a dropped reply) with it; the consumer leases through the service, writes
each result straight to the database (its own effect) and acks through the service: at least
once. The service's own database connections go through the chaos proxy.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg

from pgmbus.reconnect import Backoff
from pgmbus.testing.chaos import History
from pgmbus.testing.chaos.history import Unknown
from tests.chaos.workloads import INSERT_RESULT, Workload, _pause

log = logging.getLogger("pgmbus.chaos")

ADD_CLIENT = "SELECT api_key FROM mbus.timer_add_client(%s)"
SET_SCOPES = "SELECT mbus.api_set_scopes(%s, ARRAY['queues:write:*', 'timers:write:*'])"
RETRY = {"kind": "constant", "delay_s": 0.2}


def api_key(dsn: str, name: str = "chaos_http") -> str:
    """A new API key allowed every queue action."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(ADD_CLIENT, (name,)).fetchone()
        conn.execute(SET_SCOPES, (name,))
    assert row is not None
    return str(row[0])


class HttpProducer(Workload):
    """POST ``<name>/<n>`` values to ``/v1/queues/{queue}/messages`` with iids."""

    def __init__(
        self,
        history: History,
        workload: str,
        name: str,
        base: str,
        key: str,
        queue: str,
        *,
        max_ops: int,
        rate: float = 60.0,
        tries: int = 30,
    ) -> None:
        super().__init__(name)
        self.history, self.workload, self.base, self.queue = history, workload, base, queue
        self.headers = {"authorization": f"Bearer {key}"}
        self.max_ops, self.rate, self.tries = max_ops, rate, tries
        self.statuses: dict[int, int] = {}

    def _post(self, http: httpx.Client, value: str, iid: str) -> None:
        try:
            r = http.post(
                f"/v1/queues/{self.queue}/messages",
                json={"data": {"v": value}, "iid": iid},
                headers=self.headers,
            )
        except httpx.ConnectError:
            raise  # the service did not get it: fail
        except httpx.TransportError as exc:
            raise Unknown("http post") from exc
        self.statuses[r.status_code] = self.statuses.get(r.status_code, 0) + 1
        if r.status_code == 201:
            return
        if r.status_code >= 500:
            raise Unknown(f"http {r.status_code}: {r.text[:200]}")
        raise AssertionError(f"unexpected answer {r.status_code}: {r.text[:300]}")

    def body(self) -> None:
        backoff = Backoff(cap=1.0)
        with httpx.Client(base_url=self.base, timeout=5.0) as http:
            for seq in range(1, self.max_ops + 1):
                if self.stop_event.is_set():
                    break
                value = f"{self.name}/{seq}"
                iid = f"chaos:{self.workload}:{value}"
                for _ in range(self.tries):
                    try:
                        with self.history.op(self.workload, self.name, "enqueue", value):
                            self._post(http, value, iid)
                        backoff.reset()
                        break
                    except httpx.ConnectError:
                        pass
                    _pause(self.stop_event, backoff)
                    if self.stop_event.is_set():
                        break
                time.sleep(1.0 / self.rate)


class HttpTimerCreator(Workload):
    """POST ``/v1/callbacks`` due now (event key ``<name>-<n>``, context ``{"v": "<name>/<n>"}``)
    to the service, whose embedded dispatcher calls ``url``; an unknown outcome is retried with
    the same key (creation is idempotent on it: 201 created, 200 it existed)."""

    def __init__(
        self,
        history: History,
        workload: str,
        name: str,
        base: str,
        key: str,
        url: str,
        *,
        max_ops: int,
        rate: float = 60.0,
        tries: int = 30,
    ) -> None:
        super().__init__(name)
        self.history, self.workload, self.base, self.url = history, workload, base, url
        self.headers = {"authorization": f"Bearer {key}"}
        self.max_ops, self.rate, self.tries = max_ops, rate, tries
        self.statuses: dict[int, int] = {}

    def _create(self, http: httpx.Client, value: str) -> None:
        body = {
            "group_key": "chaos",
            "event_key": value.replace("/", "-"),
            "run_at": datetime.now(UTC).isoformat(),
            "url": self.url,
            "context": {"v": value},
            "retry": RETRY,
        }
        try:
            r = http.post("/v1/callbacks", json=body, headers=self.headers)
        except httpx.ConnectError:
            raise
        except httpx.TransportError as exc:
            raise Unknown("http create") from exc
        self.statuses[r.status_code] = self.statuses.get(r.status_code, 0) + 1
        if r.status_code in (200, 201):
            return
        if r.status_code >= 500:
            raise Unknown(f"http {r.status_code}: {r.text[:200]}")
        raise AssertionError(f"unexpected answer {r.status_code}: {r.text[:300]}")

    def body(self) -> None:
        backoff = Backoff(cap=1.0)
        with httpx.Client(base_url=self.base, timeout=5.0) as http:
            for seq in range(1, self.max_ops + 1):
                if self.stop_event.is_set():
                    break
                value = f"{self.name}/{seq}"
                for _ in range(self.tries):
                    try:
                        with self.history.op(self.workload, self.name, "enqueue", value):
                            self._create(http, value)
                        backoff.reset()
                        break
                    except httpx.ConnectError:
                        pass
                    _pause(self.stop_event, backoff)
                    if self.stop_event.is_set():
                        break
                time.sleep(1.0 / self.rate)


class HttpConsumer(Workload):
    """Lease through the service, write results to ``dsn``, ack through the service."""

    def __init__(self, workload: str, base: str, key: str, dsn: str, queue: str) -> None:
        super().__init__(f"{workload}-consumer")
        self.workload, self.base, self.dsn, self.queue = workload, base, dsn, queue
        self.headers = {"authorization": f"Bearer {key}"}
        self.errors = 0
        self.lost_acks = 0

    def _call(self, http: httpx.Client, path: str, body: dict[str, Any]) -> httpx.Response:
        return http.post(f"/v1/queues/{self.queue}/{path}", json=body, headers=self.headers)

    def body(self) -> None:
        backoff = Backoff(cap=1.0)
        lease = {"amount": 5, "lease_s": 3, "wait_s": 0.5, "max_attempts": 1000}
        results: psycopg.Connection[Any] | None = None
        with httpx.Client(base_url=self.base, timeout=5.0) as http:
            while not self.stop_event.is_set():
                try:
                    r = self._call(http, "lease", lease)
                except httpx.TransportError as exc:
                    self.errors += 1
                    log.info("lease through serve failed: %s", exc)
                    _pause(self.stop_event, backoff)
                    continue
                if r.status_code != 200:
                    if r.status_code < 500:
                        raise AssertionError(f"lease: {r.status_code} {r.text[:300]}")
                    self.errors += 1
                    _pause(self.stop_event, backoff)
                    continue
                backoff.reset()
                for m in r.json()["messages"]:
                    message = f"{m['iid']}@{m['added']}"  # two stored copies differ
                    try:
                        if results is None or results.closed or results.broken:
                            results = psycopg.connect(self.dsn, autocommit=True)
                        results.execute(INSERT_RESULT, (self.workload, m["data"]["v"], message))
                    except psycopg.OperationalError:
                        self.errors += 1  # no result, no ack: it comes back after its lease
                        continue
                    try:
                        ack = self._call(http, "ack", {"token": m["token"]})
                        if ack.status_code != 204:
                            self.lost_acks += 1  # 409: lease lost; 5xx: comes back later
                    except httpx.TransportError:
                        self.lost_acks += 1
        if results is not None:
            results.close()
