"""How deep JSON nests, measured without recursion (the value may be deeper than Python's
stack allows): parsed values (the HTTP API's timer contexts) and JSON text (rows a Spark job
writes, checked before they are copied)."""

from __future__ import annotations

import re
from typing import Any

#: The deepest nesting accepted, as the database's ``mbus.json_too_deep`` (messages, events):
#: the HTTP API's serializer stops near 250 levels, Python's json near 1,000.
MAX_DEPTH = 100

# a JSON string (its brackets are not structure), or one bracket
_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


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


def text_deeper_than(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON ``text``'s objects and arrays nest more than ``limit`` levels.

    Counts brackets outside strings; the text is not validated (the database parses it).
    """
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > limit:
                return True
        elif token in ("]", "}"):
            depth -= 1
    return False
