"""The web dashboard at ``/``: static HTML, CSS and JavaScript shipped in the package."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

UI = "/_assets/ui"


def static_dir() -> Path:
    """The dashboard's files (``pgmbus/http/static``)."""
    return Path(str(resources.files("pgmbus.http").joinpath("static")))


def install(app: FastAPI) -> None:
    """Serve the dashboard page at ``/`` and its assets under ``/_assets/ui``."""
    app.mount(UI, StaticFiles(directory=static_dir()), name="dashboard-assets")

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(static_dir() / "index.html", media_type="text/html")
