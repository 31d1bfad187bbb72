"""Fault injection for tests: a TCP proxy that cuts and stalls, a history recorder, a checker.

See docs/guarantees.md for the suite built on them (``make chaos``).
"""

from pgmbus.testing.chaos.checker import Delivery, Report, check, format_table
from pgmbus.testing.chaos.history import History, Op
from pgmbus.testing.chaos.proxy import ChaosProxy

__all__ = ["ChaosProxy", "Delivery", "History", "Op", "Report", "check", "format_table"]
