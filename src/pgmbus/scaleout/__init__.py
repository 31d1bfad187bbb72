"""Scale-out: one bus over several PostgreSQL servers, placed by a map on a home database."""

from pgmbus.scaleout.move import MoveReport, move_queue
from pgmbus.scaleout.placement import Cluster, Placement, key_slot, server_for_key
from pgmbus.scaleout.topics import TopicChangeReport, change_topic_servers

__all__ = [
    "Cluster",
    "MoveReport",
    "Placement",
    "TopicChangeReport",
    "change_topic_servers",
    "key_slot",
    "move_queue",
    "server_for_key",
]
