"""The worker's handler: mark the order shipped (runs in ``manage.py pgmbus_worker``)."""

import time

from orders.models import Order
from pgmbus.queues import Message


def ship(message: Message) -> None:
    """``{"sleep": s}`` makes shipping take that long (a job in hand at shutdown)."""
    time.sleep(float(message.data.get("sleep", 0)))
    Order.objects.filter(pk=message.data["order"]).update(shipped=True)


def record(message: Message) -> None:
    """Write the message's value into ``chaos_results`` through Django's connection (the
    failover tests: a connection broken by a failover is dropped around each call)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO chaos_results (workload, value, message) VALUES (%s, %s, %s)",
            ["django", message.data["v"], str(message.id)],
        )
