"""Sends a Celery task from Django code, as a Django view would:
``python -m tests.contrib.celery_django_send MODE KEY`` (the app's row is ``KEY:app``).

``commit`` prints the database's clock just before its commit.
"""

from __future__ import annotations

import os
import sys
import time

import django
from django.conf import settings
from psycopg.conninfo import conninfo_to_dict

_db = conninfo_to_dict(os.environ["PGMBUS_CELERY_DSN"])
settings.configure(
    USE_TZ=True,
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": _db["dbname"],
            "USER": _db.get("user", ""),
            "PASSWORD": _db.get("password", ""),
            "HOST": _db.get("host", ""),
            "PORT": _db.get("port", ""),
        }
    },
)
django.setup()

from django.db import connection, transaction  # noqa: E402

from tests.contrib.celery_app import stamp  # noqa: E402


class Rollback(Exception):
    pass


def app_row(key: str) -> None:
    with connection.cursor() as cur:
        cur.execute("INSERT INTO celery_effects (key, worker) VALUES (%s, 'app')", [key + ":app"])


def send(mode: str, key: str) -> None:
    if mode == "commit":
        with transaction.atomic():
            app_row(key)
            stamp.delay(key)
            time.sleep(1.0)  # the worker must not see the task before the commit
            with connection.cursor() as cur:
                cur.execute("SELECT clock_timestamp()::text")
                print(cur.fetchone()[0])
    elif mode in ("rollback", "opt-out"):
        options = {"pgmbus_transactional": False} if mode == "opt-out" else {}
        try:
            with transaction.atomic():
                app_row(key)
                stamp.apply_async((key,), **options)
                raise Rollback
        except Rollback:
            pass
    elif mode == "savepoint":
        with transaction.atomic():
            stamp.delay(key + ":outer")
            try:
                with transaction.atomic():
                    stamp.delay(key + ":inner")
                    raise Rollback
            except Rollback:
                pass
    elif mode == "autocommit":
        stamp.delay(key)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    send(sys.argv[1], sys.argv[2])
