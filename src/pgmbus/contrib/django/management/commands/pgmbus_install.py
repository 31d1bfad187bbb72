"""``manage.py pgmbus_install [--database ALIAS]``: install or upgrade the mbus schema."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from pgmbus import schema
from pgmbus.contrib.django import connection, database_alias


class Command(BaseCommand):  # type: ignore[misc]
    help = "Install the mbus schema (a no-op when current) on the pgmbus database."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--database", default=None, help="Database alias (default: PGMBUS).")

    def handle(self, *args: Any, **options: Any) -> None:
        alias = database_alias(options["database"])
        result: Any = schema.install(connection(alias))
        # install() returns the migrations applied, or an InstallResult holding them
        applied = list(getattr(result, "migrations", result))
        changed = bool(getattr(result, "changed", applied))
        names = ", ".join(f"{m.version:04d}" for m in applied) or "none"
        state = "updated" if changed else "current"
        self.stdout.write(f"pgmbus: schema {state} on {alias!r}; migrations applied: {names}")
