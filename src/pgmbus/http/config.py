"""Settings of the HTTP service (``pgmbus serve``)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from pgmbus.errors import ConfigurationError
from pgmbus.http.listeners import DEFAULT_MAX_LISTENER_BYTES, DEFAULT_MAX_LISTENERS_PER_KEY
from pgmbus.timers.dispatcher import DispatcherConfig
from pgmbus.timers.netguard import NetworkGuard


@dataclass
class ServiceConfig:
    """Settings of ``pgmbus serve``.

    Parameters
    ----------
    dsn:
        The database.
    pool_size:
        Connections per pool at most (the service keeps one pool per access style).
    max_listening_waits:
        Long-polled leases (``wait_s``) that wait for a queue's NOTIFY at once, each on a
        connection of their own pool (never the pool of posts and acks); more waits poll every
        second, holding no connection.
    batch_max_items, batch_max_wait_s:
        Batching of timer creates.
    run_dispatcher, dispatcher, guard:
        Run a timers dispatcher in the process, its settings and its network guard. The guard
        (default: one built from ``$PGMBUS_ALLOW_NETWORKS``) also checks timer URLs when a
        callback or schedule is created or changed (422 ``refused_url``).
    max_body_bytes:
        Largest request body accepted (413 beyond); default ``$PGMBUS_MAX_BODY_BYTES``, else
        1 MiB.
    max_context_bytes:
        Largest timer ``context`` accepted, in bytes of its JSON text (413 beyond). The
        database's own limit is the setting ``timers.max_context_bytes`` (same default): raise
        both.
    max_url_length:
        Longest timer ``url`` accepted, in bytes (422 beyond; database setting
        ``timers.max_url_length``).
    max_listener_bytes:
        Bytes of SSE frames one live listener may have unsent; a client that falls further
        behind is dropped (``event: overflow``). Default ``$PGMBUS_MAX_LISTENER_BYTES``, else
        256 KiB.
    max_listeners_per_key:
        SSE listener connections one API key may hold at once (429 beyond; a dropped listener
        counts until its client closes the connection). Default
        ``$PGMBUS_MAX_LISTENERS_PER_KEY``, else 500. One key's listeners hold at most the
        product of the two (128 MiB by default) in queued frames.
    metrics_public:
        Serve ``/metrics`` without a key (Prometheus' usual setup); otherwise any valid key.
        Default ``$PGMBUS_METRICS_PUBLIC`` (``true``/``false``), else true.
    late_after_s:
        A pending callback due for longer than this counts as late in the metrics.
    recent_window_s:
        How far back (by start time) a scrape looks for timer calls recorded since the
        previous scrape (the counters ``pgmbus_timer_calls_total`` and
        ``pgmbus_timer_lateness_seconds``); a call recorded later than this after its start is
        not counted.
    auth_cache_s:
        How long a key's scopes are cached in the process.
    sample_every_s, sample_window_s:
        The dashboard's charts: the service samples queue depths and totals, stream group
        backlogs and timer lateness every ``sample_every_s`` seconds (default
        ``$PGMBUS_SAMPLE_EVERY_S``, else 10) and keeps the last ``sample_window_s`` seconds of
        them in memory (default one hour; at most 9,000 samples).
    prometheus_url:
        A Prometheus that scrapes this service's (or ``pgmbus metrics``') ``/metrics``: the
        charts of queues and stream groups are then read from it (last hour, at most 240
        points), and from the samples whenever it fails to answer. Default
        ``$PGMBUS_PROMETHEUS_URL``, else none. An ``http`` or ``https`` URL; a path prefix is
        kept (``http://host:9090/prometheus``).
    prometheus_timeout_s:
        How long a chart waits for Prometheus before it is drawn from the samples.
    prometheus_rate_window_s:
        The range of the ``rate()`` behind posted/s and consumed/s; it must hold at least two
        scrapes. Default ``$PGMBUS_PROMETHEUS_RATE_WINDOW_S``, else 120.
    """

    dsn: str
    pool_size: int = 10
    max_listening_waits: int = 10
    batch_max_items: int = 200
    batch_max_wait_s: float = 0.05
    run_dispatcher: bool = True
    dispatcher: DispatcherConfig | None = None
    guard: NetworkGuard | None = None
    max_body_bytes: int = field(default_factory=lambda: _env_int("PGMBUS_MAX_BODY_BYTES", 1 << 20))
    max_context_bytes: int = 65536
    max_url_length: int = 4096
    max_listener_bytes: int = field(
        default_factory=lambda: _env_int("PGMBUS_MAX_LISTENER_BYTES", DEFAULT_MAX_LISTENER_BYTES)
    )
    max_listeners_per_key: int = field(
        default_factory=lambda: _env_int(
            "PGMBUS_MAX_LISTENERS_PER_KEY", DEFAULT_MAX_LISTENERS_PER_KEY
        )
    )
    metrics_public: bool = field(default_factory=lambda: _env_bool("PGMBUS_METRICS_PUBLIC", True))
    late_after_s: float = 5.0
    recent_window_s: float = 300.0
    auth_cache_s: float = 60.0
    sample_every_s: float = field(
        default_factory=lambda: float(_env_int("PGMBUS_SAMPLE_EVERY_S", 10))
    )
    sample_window_s: float = 3600.0
    prometheus_url: str | None = field(
        default_factory=lambda: os.environ.get("PGMBUS_PROMETHEUS_URL", "").strip() or None
    )
    prometheus_timeout_s: float = 5.0
    prometheus_rate_window_s: float = field(
        default_factory=lambda: float(_env_int("PGMBUS_PROMETHEUS_RATE_WINDOW_S", 120))
    )

    def __post_init__(self) -> None:
        if self.prometheus_url is not None:
            url = urlsplit(self.prometheus_url)
            if url.scheme not in ("http", "https") or not url.hostname:
                raise ConfigurationError(
                    "the Prometheus URL must be an http or https URL with a host, not "
                    f"{self.prometheus_url!r}"
                )
        for name in ("prometheus_timeout_s", "prometheus_rate_window_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigurationError(f"{name} must be a positive number, not {value!r}")


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise ConfigurationError(f"${name} must be a positive integer, not {text!r}")
    return int(text)


def _env_bool(name: str, default: bool) -> bool:
    text = os.environ.get(name, "").strip().lower()
    if not text:
        return default
    if text not in ("true", "false", "1", "0", "yes", "no"):
        raise ConfigurationError(f"${name} must be true or false, not {text!r}")
    return text in ("true", "1", "yes")
