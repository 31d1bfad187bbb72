"""pgmbus: a message bus inside PostgreSQL (queues, streams, timers in schema ``mbus``)."""

from pgmbus.handlers import App

__version__ = "0.1.0"

__all__ = ["App", "__version__"]
