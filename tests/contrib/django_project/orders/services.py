"""Placing an order: the row and its message commit together or not at all."""

from django.db import transaction

from orders.models import Order
from pgmbus.contrib.django import post


def place_order(item: str, *, fail: bool = False) -> int:
    with transaction.atomic():
        order = Order.objects.create(item=item)
        post("orders", {"order": order.pk, "item": item})
        if fail:
            raise RuntimeError("payment declined")
    return int(order.pk)
