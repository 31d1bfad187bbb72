"""A time given in a JSON request: RFC 3339 text with an offset, never a number.

FastAPI validates the decoded JSON in pydantic's Python mode, where a datetime field also takes a
number (seconds since 1970); the OpenAPI schema says a string of format date-time, so a number is
refused here as the schema refuses it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AwareDatetime, BeforeValidator


def _text_or_datetime(value: Any) -> Any:
    if not isinstance(value, str | datetime):
        raise ValueError("a time is a string: RFC 3339 with an offset, e.g. 2026-01-31T12:00:00Z")
    return value


JsonTime = Annotated[AwareDatetime, BeforeValidator(_text_or_datetime)]
