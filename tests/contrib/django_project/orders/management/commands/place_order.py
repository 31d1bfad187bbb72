"""``manage.py place_order ITEM [--fail]``: place an order (a failing one rolls back)."""

from typing import Any

from django.core.management.base import BaseCommand

from orders.services import place_order


class Command(BaseCommand):
    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("item")
        parser.add_argument("--fail", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            pk = place_order(options["item"], fail=options["fail"])
        except RuntimeError as exc:
            self.stdout.write(f"rolled back: {exc}")
        else:
            self.stdout.write(f"placed {pk}")
