"""The worker's handler: mark the order shipped (runs in ``manage.py pgmbus_worker``)."""

import time

from orders.models import Order
from pgmbus.queues import Message


def ship(message: Message) -> None:
    """``{"sleep": s}`` makes shipping take that long (a job in hand at shutdown)."""
    time.sleep(float(message.data.get("sleep", 0)))
    Order.objects.filter(pk=message.data["order"]).update(shipped=True)
