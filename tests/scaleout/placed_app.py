"""The app run by ``pgmbus worker ... --placement-home`` in the scale-out worker test.

Its handler records each message in table ``handled`` of ``PGMBUS_DSN`` (the home database).
"""

from __future__ import annotations

import os

import psycopg

from pgmbus.handlers import App
from pgmbus.queues import Message

app = App()


@app.handler("orders", poll_interval=0.1)
def order(message: Message) -> None:
    """Record the message where the test can see it, whichever server it came from."""
    with psycopg.connect(os.environ["PGMBUS_DSN"], autocommit=True) as conn:
        conn.execute("INSERT INTO handled (iid) VALUES (%s)", (message.iid,))
