"""pgmbus: a message bus inside PostgreSQL (queues, streams, timers in schema ``mbus``)."""

__version__ = "0.1.0"
