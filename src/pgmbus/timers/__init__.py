"""Timers: scheduled HTTP callbacks (the CallMeBack service) on the ``mbus.timer_*`` SQL API."""

from __future__ import annotations

from pgmbus.timers.records import STATUSES, Client

__all__ = ["STATUSES", "Client"]
