"""API key scopes: ``engine:action:glob`` strings and the rule that says what they allow."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Literal

Engine = Literal["queues", "streams", "timers"]
Action = Literal["read", "consume", "post", "write"]

_SCOPE = re.compile(r"^(queues|streams|timers):(read|consume|post|write):([^\s,]{1,200})$")


@dataclass(frozen=True)
class Scope:
    """One grant: ``action`` on the ``engine``'s objects whose names match ``glob``."""

    engine: str
    action: str
    glob: str

    @classmethod
    def parse(cls, text: str) -> Scope:
        """Parse ``engine:action:glob``; raises ``ValueError`` when malformed."""
        match = _SCOPE.match(text)
        if match is None:
            raise ValueError(
                f"invalid scope {text!r}: use engine:action:glob with engine queues|streams|"
                "timers and action read|consume|post|write"
            )
        return cls(match[1], match[2], match[3])

    def allows(self, engine: str, action: str, name: str) -> bool:
        """Does this grant cover ``action`` on ``engine`` object ``name``?

        ``write`` covers every action; ``consume`` and ``post`` also cover ``read``.
        """
        if self.engine != engine or not fnmatch.fnmatchcase(name, self.glob):
            return False
        return self.action in (action, "write") or (
            action == "read" and self.action in ("consume", "post")
        )


@dataclass(frozen=True)
class Principal:
    """The authenticated client of a request: its timers owner id, name and scopes."""

    client_id: int
    name: str
    scopes: tuple[Scope, ...]

    def can(self, engine: Engine, action: Action, name: str) -> bool:
        """True when some scope allows ``action`` on ``engine`` object ``name``."""
        return any(s.allows(engine, action, name) for s in self.scopes)

    def can_any(self, engine: Engine, action: Action) -> bool:
        """True when some scope allows ``action`` on at least some object of ``engine``."""
        return any(
            s.engine == engine and (action == "read" or s.action in (action, "write"))
            for s in self.scopes
        )

    def scope_texts(self) -> list[str]:
        """The scopes as stored."""
        return [f"{s.engine}:{s.action}:{s.glob}" for s in self.scopes]
