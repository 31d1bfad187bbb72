"""The Django app of pgmbus (label ``pgmbus``): its migration installs the mbus schema."""

from __future__ import annotations

from django.apps import AppConfig


class PgmbusConfig(AppConfig):  # type: ignore[misc]
    """``INSTALLED_APPS`` entry ``"pgmbus.contrib.django"``."""

    name = "pgmbus.contrib.django"
    label = "pgmbus"
    verbose_name = "pgmbus"
    default_auto_field = "django.db.models.BigAutoField"
