"""``/docs`` (Swagger UI) and ``/redoc`` from assets installed with the package: no CDN."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

ASSETS = "/_assets/docs"
_REDOC_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"


def assets_dir() -> Path:
    """The folder of Swagger UI, ReDoc and favicon files (the ``fastapi-offline`` wheel)."""
    return Path(str(resources.files("fastapi_offline").joinpath("static")))


@functools.cache
def redoc_bundle() -> bytes:
    """ReDoc's bundle with its one external URL (the Redocly logo) pointed at a local file."""
    text = (assets_dir() / "redoc.standalone.js").read_bytes()
    return text.replace(_REDOC_LOGO, f"{ASSETS}/favicon.png".encode())


def install(app: FastAPI) -> None:
    """Serve the interactive API docs from local files (``app`` built with docs_url=None)."""
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get(f"{ASSETS}/redoc.standalone.js", include_in_schema=False)
    async def redoc_js() -> Response:
        return Response(
            redoc_bundle(),
            media_type="text/javascript",
            headers={"cache-control": "public, max-age=86400"},
        )

    app.mount(ASSETS, StaticFiles(directory=assets_dir()), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} - API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url,
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{ASSETS}/favicon.png",
            with_google_fonts=False,
        )
