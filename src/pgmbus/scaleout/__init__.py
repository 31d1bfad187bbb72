"""Scale-out: one bus over several PostgreSQL servers, placed by a map on a home database."""

from pgmbus.scaleout.move import MoveReport, move_queue
from pgmbus.scaleout.placement import Cluster, Placement, key_slot

__all__ = ["Cluster", "MoveReport", "Placement", "key_slot", "move_queue"]
