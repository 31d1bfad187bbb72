"""The worker's handler: mark the order shipped (runs in ``manage.py pgmbus_worker``)."""

from orders.models import Order
from pgmbus.queues import Message


def ship(message: Message) -> None:
    Order.objects.filter(pk=message.data["order"]).update(shipped=True)
