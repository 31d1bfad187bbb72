"""pgmbus over HTTP: one router per engine, auth with scopes, /metrics, docs and dashboard.

Engines never import this package; ``pgmbus serve`` runs :func:`create_app` with uvicorn.
"""

from pgmbus.http.app import create_app
from pgmbus.http.config import ServiceConfig
from pgmbus.http.metrics import fetch_snapshot, registry_for

__all__ = ["ServiceConfig", "create_app", "fetch_snapshot", "registry_for"]
