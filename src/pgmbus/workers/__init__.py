"""Workers: run the handlers declared with ``@bus.handler`` / ``@bus.stream_handler``."""

from pgmbus.handlers import (
    App,
    Handlers,
    HandlerTimeout,
    QueueHandler,
    RetryPolicy,
    StreamHandler,
)
from pgmbus.workers.queue_loop import HandlerStats
from pgmbus.workers.runtime import Report, adrain, drain, load_target, run, serve

__all__ = [
    "App",
    "HandlerStats",
    "HandlerTimeout",
    "Handlers",
    "QueueHandler",
    "Report",
    "RetryPolicy",
    "StreamHandler",
    "adrain",
    "drain",
    "load_target",
    "run",
    "serve",
]
