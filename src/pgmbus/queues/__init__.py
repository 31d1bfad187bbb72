"""Queues: the mbus API from Python (``Bus``, ``AsyncBus``, messages, the worker)."""

from pgmbus.data.queues import await_done, await_queue
from pgmbus.queues._bus import Bus
from pgmbus.queues._bus_async import AsyncBus, channel
from pgmbus.queues.model import ConsumerStats, DeadMessage, Message, QueueCounters, QueueInfo

__all__ = [
    "AsyncBus",
    "Bus",
    "ConsumerStats",
    "DeadMessage",
    "Message",
    "QueueCounters",
    "QueueInfo",
    "await_done",
    "await_queue",
    "channel",
]
