"""The Order table and the orders queue (after pgmbus's schema migration)."""

from django.db import migrations, models


def create_queue(apps, schema_editor):  # type: ignore[no-untyped-def]
    from pgmbus.contrib.django import bus

    bus().create_queue("orders")


class Migration(migrations.Migration):
    initial = True
    dependencies = [("pgmbus", "0001_install")]
    operations = [
        migrations.CreateModel(
            name="Order",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("item", models.CharField(max_length=100)),
                ("shipped", models.BooleanField(default=False)),
            ],
        ),
        migrations.RunPython(create_queue, migrations.RunPython.noop),
    ]
