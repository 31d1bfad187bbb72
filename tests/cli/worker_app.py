"""An app for ``pgmbus worker tests.cli.worker_app:app`` in the error walk (it never runs)."""

from __future__ import annotations

from pgmbus.handlers import App
from pgmbus.queues import Message

app = App()  # no DSN at import: the command's --dsn decides


@app.handler("q")
def handle(message: Message) -> None:
    """Never called: the walk's commands fail before any work."""
