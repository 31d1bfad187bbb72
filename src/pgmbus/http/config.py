"""Settings of the HTTP service (``pgmbus serve``)."""

from __future__ import annotations

from dataclasses import dataclass

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
    batch_max_items, batch_max_wait_s:
        Batching of timer creates.
    run_dispatcher, dispatcher, guard:
        Run a timers dispatcher in the process, its settings and its network guard.
    max_body_bytes:
        Largest request body accepted (413 beyond).
    metrics_public:
        Serve ``/metrics`` without a key (Prometheus' usual setup); otherwise any valid key.
    late_after_s:
        A pending callback due for longer than this counts as late in the metrics.
    recent_window_s:
        The window of the timers' recent-call metrics (calls by outcome, lateness histogram).
    auth_cache_s:
        How long a key's scopes are cached in the process.
    """

    dsn: str
    pool_size: int = 10
    batch_max_items: int = 200
    batch_max_wait_s: float = 0.05
    run_dispatcher: bool = True
    dispatcher: DispatcherConfig | None = None
    guard: NetworkGuard | None = None
    max_body_bytes: int = 1 << 20
    metrics_public: bool = True
    late_after_s: float = 5.0
    recent_window_s: float = 300.0
    auth_cache_s: float = 60.0
