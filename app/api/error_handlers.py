"""Map domain errors to HTTP: 404 for unknown names (with suggestions), 422 for bad input.

One error shape for every 422, FastAPI's own: {"detail": [{"loc", "msg", "type"}]}, with the
offending input left out (it may be a NaN, which JSON cannot carry).
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.routing import Match

from app.catalog.names import UnknownName
from app.engine import EngineError, InvalidInput, Unsupported
from app.http.budget import OverBudget, over_budget
from app.http.responses import StrictJSONResponse
from app.schemas.comparison import CompareRequest
from app.schemas.measurement_bodies import MeasurementIn
from app.schemas.planning_requests import MemoryFitRequest
from app.schemas.requests import OptimalBatchRequest, ScalingRequest
from app.services.recording import IDEMPOTENCY_KEY

# the fields a request body holds beside its workload (an engine error names them bare)
_TOP_LEVEL = frozenset(
    (
        MeasurementIn.model_fields.keys()
        | ScalingRequest.model_fields.keys()
        | OptimalBatchRequest.model_fields.keys()
        | CompareRequest.model_fields.keys()
        | MemoryFitRequest.model_fields.keys()
    )
    - {"workload"}
)
_QUERY_ONLY = frozenset({"fail_on"})
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")  # what a 405 may allow
_HEADERS = frozenset({IDEMPOTENCY_KEY})


def _loc(request: Request, field: str) -> list[str]:
    parts = field.split(".")
    if parts[0] in _HEADERS:
        return ["header", *parts]
    if request.method == "GET" or parts[0] in _QUERY_ONLY:
        return ["query", *parts]
    if parts[0] in _TOP_LEVEL:
        return ["body", *parts]
    return ["body", "workload", *parts]


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


async def _unknown_name(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, UnknownName)
    return StrictJSONResponse(
        status_code=404,
        content={
            "detail": {
                "message": f"unknown {exc.kind} {exc.name!r}",
                "suggestions": exc.suggestions,
            }
        },
    )


async def _engine_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, (InvalidInput, Unsupported))
    kind = "unsupported" if isinstance(exc, Unsupported) else "value_error"
    detail = [{"loc": _loc(request, exc.field), "msg": exc.message, "type": kind}]
    return StrictJSONResponse(status_code=422, content={"detail": detail})


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    detail = []
    for error in exc.errors():
        item: dict[str, Any] = {
            "loc": [str(part) for part in error.get("loc", ())],
            "msg": str(error.get("msg", "")),
            "type": str(error.get("type", "")),
        }
        ctx = error.get("ctx")
        if ctx:
            item["ctx"] = {key: _clean(value) for key, value in ctx.items()}
        detail.append(item)
    return StrictJSONResponse(status_code=422, content={"detail": detail})


async def _method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
    """405 whose Allow header names every method of the path: Starlette's names those of the
    first route at the path alone (GET of /check, which POST takes too)."""
    assert isinstance(exc, HTTPException)
    routes = request.app.router.routes
    methods = [
        method
        for method in _METHODS
        if any(r.matches({**request.scope, "method": method})[0] is Match.FULL for r in routes)
    ]
    # the request's own method matching: refused inside a mounted app (static files), as it says
    headers = exc.headers if request.method in methods else {"Allow": ", ".join(methods)}
    return StrictJSONResponse(status_code=405, content={"detail": exc.detail}, headers=headers)


# what FastAPI raises (a 400) for a body it cannot parse other than as a JSON syntax error
_UNPARSABLE = "There was an error parsing the body"


async def _unparsable_body(request: Request, exc: Exception) -> Response:
    """422 for a body FastAPI could not parse (JSON that is not UTF-8, or nested deeper than
    Python's parser goes), which it answers with a vague 400: malformed JSON like any other."""
    assert isinstance(exc, HTTPException)
    if exc.detail != _UNPARSABLE:
        return await http_exception_handler(request, exc)
    message = "JSON decode error: not UTF-8, or nested too deep"
    detail = [{"loc": ["body"], "msg": message, "type": "json_invalid"}]
    return StrictJSONResponse(status_code=422, content={"detail": detail})


def install(app: FastAPI) -> None:
    """Register the handlers on `app`."""
    app.add_exception_handler(UnknownName, _unknown_name)
    app.add_exception_handler(EngineError, _engine_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(OverBudget, over_budget)
    app.add_exception_handler(405, _method_not_allowed)
    app.add_exception_handler(400, _unparsable_body)
