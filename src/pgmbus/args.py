"""Checks of the public Python API's arguments, made before anything reaches the database.

Each check raises :class:`~pgmbus.errors.InvalidArgument` (``MB006``; for JSON data its
subclass :class:`~pgmbus.errors.InvalidPayload`, ``MB005``) whose message starts with the
argument's name, and returns the value unchanged: nothing is converted or clamped (``1.5`` is
not a priority, ``"5"`` not a count, ``True`` not an integer). PostgreSQL text cannot hold a
NUL character and the driver cannot encode a lone surrogate; both are refused here, by name,
instead of as a driver error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from pgmbus.errors import InvalidArgument, InvalidPayload

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _refuse(name: str, problem: str) -> InvalidArgument:
    return InvalidArgument(f"{name} {problem}", sqlstate="MB006")


def _kind(value: object) -> str:
    return type(value).__name__


def text(name: str, value: Any, *, optional: bool = False) -> str | None:
    """A ``str`` PostgreSQL can store (no NUL, no lone surrogate); None when ``optional``."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _refuse(name, f"must be a string, not {_kind(value)}")
    if _UNSTORABLE.search(value):
        raise _refuse(name, "holds a NUL character or a lone surrogate, which text cannot hold")
    return value


def texts(name: str, value: Any, *, optional: bool = False) -> list[str] | None:
    """One str or a sequence (not a str, bytes or mapping) of them, as a list."""
    if value is None and optional:
        return None
    if isinstance(value, str):
        return [str(text(name, value))]
    if not isinstance(value, Sequence) or isinstance(value, bytes | bytearray):
        raise _refuse(name, f"must be a string or a sequence of strings, not {_kind(value)}")
    return [str(text(f"{name}[{i}]", item)) for i, item in enumerate(value)]


def integer(
    name: str, value: Any, *, low: int, high: int = 2**63 - 1, optional: bool = False
) -> int | None:
    """An ``int`` (not a bool, float or str) from ``low`` to ``high``."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _refuse(name, f"must be an int, not {_kind(value)}")
    if not low <= value <= high:
        raise _refuse(name, f"{value} is not in {low}..{high} (out of range)")
    return value


def seconds(name: str, value: Any, *, optional: bool = False) -> float | timedelta | None:
    """A finite, non-negative number of seconds (int or float, not bool) or a timedelta."""
    if value is None and optional:
        return None
    if isinstance(value, timedelta):
        if value < timedelta(0):
            raise _refuse(name, f"is out of range: negative ({value})")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _refuse(name, f"must be a number of seconds, not {_kind(value)}")
    if not math.isfinite(value) or value < 0:
        raise _refuse(name, f"is out of range: a finite number of seconds >= 0, not {value}")
    return value


def moment(name: str, value: Any, *, optional: bool = True) -> datetime | None:
    """A ``datetime`` (a ``date`` alone or a string is refused)."""
    if value is None and optional:
        return None
    if not isinstance(value, datetime):
        raise _refuse(name, f"must be a datetime, not {_kind(value)}")
    return value


def flag(name: str, value: Any) -> bool:
    """A ``bool`` (not 0, 1 or a string)."""
    if not isinstance(value, bool):
        raise _refuse(name, f"must be a bool, not {_kind(value)}")
    return value


def json_object(name: str, value: Any, *, optional: bool = False) -> Mapping[str, Any] | None:
    """A mapping that is JSON PostgreSQL can store: str keys; values dicts, lists, tuples,
    str, int, finite float, bool or None; no NUL or lone surrogate in any string."""
    if value is None and optional:
        return None
    json_text(name, value)
    return value  # type: ignore[no-any-return]  # checked: a mapping


def json_value(name: str, value: Any) -> Any:
    """Any JSON value PostgreSQL can store (see :func:`json_object`)."""
    json_text(name, value, mapping=False)
    return value


def json_text(name: str, value: Any, *, mapping: bool = True) -> str:
    """``value`` (a mapping unless ``mapping`` is false) as the JSON text to send, once it is
    known to be JSON PostgreSQL can store (see :func:`json_object`).

    The text is made by the C encoder (which the driver would run anyway: pass the text on
    instead of dumping twice) and searched for NUL escapes and lone surrogates; only when
    something is wrong does a walk in Python find the part to name.
    """
    if mapping:
        if not isinstance(value, Mapping):
            raise InvalidPayload(f"{name} must be a mapping (a JSON object)", sqlstate="MB005")
        if type(value) is not dict:
            value = dict(value)
    try:
        text = _DUMPS(value)
    except (TypeError, ValueError, RecursionError):  # not JSON, nan or inf, a cycle
        _name_the_problem(name, value)
        raise _payload(name, "is not JSON (a cycle, or a type json cannot encode)") from None
    if _UNSTORABLE_JSON.search(text) or not _keys_are_str(value):
        _name_the_problem(name, value)  # a string holding a backslash and "u0000" is fine
    return text


# what json.dumps leaves in a text PostgreSQL cannot store: NUL (escaped), lone surrogates
_UNSTORABLE_JSON = re.compile(r"\\u0000|[\ud800-\udfff]")
_DUMPS = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode


def _keys_are_str(value: Any) -> bool:
    """Whether every object key is a str (json.dumps makes strings of keys 1, True, None)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in item:
                if type(key) is not str:
                    return False
            stack.extend(v for v in item.values() if isinstance(v, dict | list | tuple))
        elif isinstance(item, list | tuple):
            stack.extend(v for v in item if isinstance(v, dict | list | tuple))
    return True


def _name_the_problem(name: str, value: Any) -> None:
    stack: list[tuple[str, Any]] = [(name, value)]
    while stack:
        where, item = stack.pop()
        if item is None or isinstance(item, bool | int):
            continue
        if isinstance(item, str):
            if _UNSTORABLE.search(item):
                raise _payload(where, "holds a NUL character or a lone surrogate")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise _payload(where, f"is {item}, which JSON cannot hold")
        elif isinstance(item, Mapping):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise _payload(where, f"has a key of type {_kind(key)} (JSON keys are str)")
                if _UNSTORABLE.search(key):
                    raise _payload(where, "has a key with a NUL character or a lone surrogate")
                stack.append((f"{where}[{key!r}]", child))
        elif isinstance(item, list | tuple):
            stack.extend((f"{where}[{i}]", child) for i, child in enumerate(item))
        else:
            raise _payload(where, f"is a {_kind(item)}, which is not JSON")
    # nothing to name: the text's match was a backslash and "u0000" inside a string


def _payload(where: str, problem: str) -> InvalidPayload:
    return InvalidPayload(f"{where} {problem}", sqlstate="MB005")
