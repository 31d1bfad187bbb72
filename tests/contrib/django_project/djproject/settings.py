"""Settings: one PostgreSQL database named by PGMBUS_DJANGO_DSN (libpq key=value pairs)."""

import os
from typing import Any

from psycopg.conninfo import conninfo_to_dict

_db = conninfo_to_dict(os.environ["PGMBUS_DJANGO_DSN"])

SECRET_KEY = "test-only"  # noqa: S105
DEBUG = False
USE_TZ = True
INSTALLED_APPS = ["pgmbus.contrib.django", "orders"]
DATABASES: dict[str, dict[str, Any]] = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _db["dbname"],
        "USER": _db.get("user", ""),
        "PASSWORD": _db.get("password", ""),
        "HOST": _db.get("host", ""),
        "PORT": _db.get("port", ""),
        # a multi-host DSN's choice of the primary (and its bound on a dead host) goes along
        "OPTIONS": {k: _db[k] for k in ("target_session_attrs", "connect_timeout") if _db.get(k)},
    }
}
# a second alias on the same database, with options, for pgmbus.contrib.django.dsn("bus")
DATABASES["bus"] = {**DATABASES["default"], "OPTIONS": {"application_name": "pgmbus-bus"}}
PGMBUS = {"DATABASE": "default"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
