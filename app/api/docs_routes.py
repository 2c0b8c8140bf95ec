"""The interactive schema at /docs, from Swagger UI's files served by the app itself (those
the `fastapi-offline` package ships), so that it works without the internet; and the order
/openapi.json lists a query model's parameters in."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/static/swagger"  # where Swagger UI's files are mounted
router = APIRouter(include_in_schema=False)


@router.get("/docs", response_class=HTMLResponse)
def docs(request: Request) -> HTMLResponse:
    """Swagger UI over /openapi.json, every file from this service."""
    return get_swagger_ui_html(
        openapi_url=str(request.app.openapi_url),
        title="roofcheck API",
        swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS}/swagger-ui.css",
        swagger_favicon_url="/static/favicon.svg",
    )


def assets() -> StaticFiles:
    """Swagger UI's files, for mounting at ASSETS."""
    return StaticFiles(directory=Path(fastapi_offline.__file__).parent / "static")
