"""Install (or bring up to date) the mbus schema on the pgmbus database alias."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import migrations

from pgmbus import schema


def install(apps: Any, schema_editor: Any) -> None:
    from pgmbus.contrib.django import database_alias

    wrapper = schema_editor.connection
    if wrapper.alias != database_alias():
        return
    wrapper.ensure_connection()
    schema.install(wrapper.connection)


class Migration(migrations.Migration):  # type: ignore[misc]
    # schema.install runs each of its migrations in a transaction of its own
    atomic = False
    dependencies: ClassVar[list[tuple[str, str]]] = []
    operations: ClassVar[list[Any]] = [
        migrations.RunPython(install, migrations.RunPython.noop, elidable=False)
    ]
