"""pgmbus: a message bus inside PostgreSQL (queues, streams, timers in schema ``mbus``)."""

from pgmbus.handlers import App

# the one place of the version (pyproject.toml reads it; CHANGELOG.md says what each brought)
__version__ = "0.2.0"

__all__ = ["App", "__version__"]
