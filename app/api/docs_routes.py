"""The interactive schema at /docs, from Swagger UI's files served by the app itself (those
the `fastapi-offline` package ships), so that it works without the internet; and the order
/openapi.json lists a query model's parameters in."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import fastapi_offline
from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

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


def in_reading_order(app: FastAPI, queries: Mapping[str, type[BaseModel]]) -> None:
    """List the parameters of each GET in `queries` (path: its query model) in the order of
    the model's JSON schema (app/schemas/queries.py, `reading_order`: what must be given
    first), rather than in the order its fields are declared in, which FastAPI follows."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        schema = generate()  # built once, then the same object
        for path, query in queries.items():
            order = list(query.model_json_schema()["properties"])
            schema["paths"][path]["get"]["parameters"].sort(key=lambda p: order.index(p["name"]))
        return schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's way to extend the schema
