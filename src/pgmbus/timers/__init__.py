"""Timers: scheduled HTTP callbacks (the CallMeBack service) on the ``mbus.timer_*`` SQL API."""

from __future__ import annotations

from pgmbus.timers.store import STATUSES, Client

__all__ = ["STATUSES", "Client"]
