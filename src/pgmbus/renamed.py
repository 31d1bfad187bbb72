"""Old spellings of renamed keywords and functions, kept as deprecated aliases."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Emit the ``DeprecationWarning`` of an old spelling ``old`` now named ``new``."""
    warnings.warn(
        f"{old} is deprecated, use {new} (docs/vocabulary.md)",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed_keywords(**old_to_new: str) -> Callable[[F], F]:
    """Accept the old keyword spellings ``old_to_new`` of a function's renamed parameters.

    A call with an old keyword gets it under its new name and a ``DeprecationWarning``; giving
    both spellings is a ``TypeError`` (as a repeated keyword is). Works for plain, ``async``
    and generator functions alike: only the call's keywords are rewritten.
    """

    def decorate(func: F) -> F:
        def rename(kwargs: dict[str, Any]) -> dict[str, Any]:
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{func.__name__}() got both {old}= and {new}=")
                    warn_renamed(f"{func.__name__}({old}=)", f"{new}=", stacklevel=4)
                    kwargs[new] = kwargs.pop(old)
            return kwargs

        call: Callable[..., Any]
        if inspect.iscoroutinefunction(func):

            async def call(*args: Any, **kwargs: Any) -> Any:
                return await func(*args, **rename(kwargs))

        else:

            def call(*args: Any, **kwargs: Any) -> Any:
                return func(*args, **rename(kwargs))

        wrapper = functools.wraps(func)(call)
        wrapper.renamed_keywords = dict(old_to_new)  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
