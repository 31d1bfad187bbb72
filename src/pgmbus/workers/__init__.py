"""Workers: run the handlers declared with ``@bus.handler`` / ``@bus.stream_handler``."""

from pgmbus.handlers import (
    App,
    HandlerProcessDied,
    Handlers,
    HandlerTimeout,
    QueueHandler,
    RetryPolicy,
    StreamHandler,
)
from pgmbus.queues.reports import HandlerStats
from pgmbus.workers.checks import missing_objects, require_objects
from pgmbus.workers.health import parse_address
from pgmbus.workers.logs import configure as configure_logs
from pgmbus.workers.placed import run_placed
from pgmbus.workers.runtime import Report, adrain, drain, dsn_of, load_target, run, serve

__all__ = [
    "App",
    "HandlerProcessDied",
    "HandlerStats",
    "HandlerTimeout",
    "Handlers",
    "QueueHandler",
    "Report",
    "RetryPolicy",
    "StreamHandler",
    "adrain",
    "configure_logs",
    "drain",
    "dsn_of",
    "load_target",
    "missing_objects",
    "parse_address",
    "require_objects",
    "run",
    "run_placed",
    "serve",
]
