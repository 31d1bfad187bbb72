"""How deep a parsed JSON value nests, measured without recursion (the value may be deeper than
Python's stack allows)."""

from __future__ import annotations

from typing import Any

#: The deepest nesting accepted, as the database's ``mbus.json_too_deep`` (messages, events):
#: the HTTP API's serializer stops near 250 levels.
MAX_DEPTH = 100


def deeper_than(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value``'s dicts and lists nest more than ``limit`` levels (a scalar is 0)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
