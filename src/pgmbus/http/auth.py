"""Bearer API keys (``mbus.timer_clients``) and the scope checks of every router."""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from pgmbus.http.scopes import Action, Engine, Principal, Scope
from pgmbus.http.state import query, state_of
from pgmbus.timers import store_async as store

_bearer = HTTPBearer(
    auto_error=False,
    description="an API key of `pgmbus timers add-client`, with scopes (`pgmbus key scopes`)",
)


async def principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The client whose API key the request carries (401 otherwise)."""
    state = state_of(request)
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise HTTPException(401, "missing bearer API key", {"WWW-Authenticate": "Bearer"})
    key = credentials.credentials
    now = time.monotonic()
    cached = state.auth.get(key)
    if cached is not None and cached[1] > now:
        known: Principal = cached[0]
        return known
    if await state.has_scopes():
        rows = await state.rows(query("authenticate"), {"api_key": key})
    else:  # a schema without the scopes DDL: keys reach their own timers only
        async with state.pool.connection() as conn:
            cid = await store.authenticate(conn, key)
        rows = [] if cid is None else [{"client_id": cid, "name": f"client {cid}", "scopes": []}]
    if not rows:
        raise HTTPException(401, "unknown API key", {"WWW-Authenticate": "Bearer"})
    row = rows[0]
    who = Principal(
        int(row["client_id"]), str(row["name"]), tuple(Scope.parse(s) for s in row["scopes"])
    )
    if len(state.auth) > 10_000:
        state.auth.clear()
    state.auth[key] = (who, now + state.config.auth_cache_s)
    return who


Caller = Annotated[Principal, Depends(principal)]


def require(who: Principal, engine: Engine, action: Action, name: str) -> None:
    """Raise 403 unless ``who`` may do ``action`` on ``engine`` object ``name``."""
    if not who.can(engine, action, name):
        raise HTTPException(403, f"the API key has no scope allowing {engine}:{action} on {name!r}")


def require_any(who: Principal, engine: Engine, action: Action) -> None:
    """Raise 403 unless ``who`` may do ``action`` on some object of ``engine``."""
    if not who.can_any(engine, action):
        raise HTTPException(403, f"the API key has no {engine}:{action} scope")
