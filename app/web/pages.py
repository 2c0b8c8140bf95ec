"""History pages, shared by the web routes and the content-negotiated measurement endpoints:
the measurement list, one measurement, one workload's history; and the pages of errors every
route shares (an unknown address, the database unreachable)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError
from sqlalchemy.orm import Session, sessionmaker
from starlette.exceptions import HTTPException

from app.catalog.names import UnknownName
from app.engine import EngineError, Phase
from app.engine.compare import (
    DEFAULT_CONFIDENCE,
    DEFAULT_THRESHOLD,
    DEFAULT_WINDOW,
    WindowGate,
)
from app.engine.units import ms_from_seconds
from app.http.negotiation import wants_html
from app.http.responses import RETRY_AFTER_S, StrictJSONResponse
from app.schemas.answers import ExpectedTime
from app.schemas.measurement_bodies import MeasurementPage, MeasurementQuery
from app.services import database_errors, history
from app.services.catalogs import Catalogs
from app.web import words
from app.web.charts import data_of, roofline_svg
from app.web.forms import covers
from app.web.history_chart import AXES, Axis, history_svg
from app.web.svg import for_page
from app.web.templating import render
from app.web.views import chip_of, workload_params

PHASES = [(str(p), str(p)) for p in Phase]
FILTERS = ("chip", "model", "phase", "label", "branch", "since", "until")
PAGING = ("offset", "cursor")


def not_found(request: Request, message: str) -> HTMLResponse:
    """A 404 page."""
    return render(request, "error.html", {"title": "Not found", "message": message}, 404)


def bad_parameters(request: Request, errors: Sequence[Any]) -> HTMLResponse:
    """A 422 page naming each parameter out of range and why (the JSON route's 422 in words)."""
    problems = "; ".join(
        f"{error['loc'][-1]}: {error['msg']}" if error.get("loc") else str(error.get("msg"))
        for error in errors
    )
    return render(request, "error.html", {"title": "Bad request", "message": problems}, 422)


def _list_errors(exc: ValidationError) -> dict[str, str]:
    """Form field -> message; what no field of the form shows (limit, cursor) is named."""
    errors = {}
    for error in exc.errors():
        name = str(error["loc"][0]) if error["loc"] else "form"
        if name in FILTERS:
            errors[name] = error["msg"]
        else:
            errors["form"] = f"{name}: {error['msg']}"
    return errors


_SIZE_FIELDS = ("batch", "seq_len", "gen_len", "dtype", "tp")
_SIZE_LENGTH = 80  # characters of a kernel's fields shown in the list


def _size(workload: dict[str, Any]) -> str:
    """What tells two workloads of one model and phase apart in the list: a transformer's
    batch, sequence length (new tokens when it generates), dtype and tensor-parallel chips;
    a kernel's own fields, cut short."""
    if workload.get("kind") == "transformer":
        return words.fields(workload, _SIZE_FIELDS)
    text = words.fields(workload)
    return text if len(text) <= _SIZE_LENGTH else text[: _SIZE_LENGTH - 1] + "…"


def _list_context(
    values: dict[str, str],
    errors: dict[str, str],
    page: MeasurementPage | None = None,
    given: dict[str, str] | None = None,
    sizes: dict[int, str] | None = None,
    *,
    regressed: dict[int, WindowGate] | None = None,
) -> dict[str, object]:
    """The template's context; `given`: the query, whose filters the paging links keep;
    `sizes`: each listed measurement's workload sizes by id; `regressed`: the gate's decision
    on each listed regression, by id."""
    given = given or {}
    newest = {k: v for k, v in given.items() if k not in PAGING}
    return {
        "values": values,
        "errors": errors,
        "page": page,
        "newest": newest if newest != given else None,  # a link back to the first page
        "older": newest | {"cursor": page.next} if page and page.next else None,
        "phase_options": PHASES,
        "sizes": sizes or {},
        "regressed": regressed or {},
        "window": DEFAULT_WINDOW,  # what history.regressions judges each listed run by
        "threshold": DEFAULT_THRESHOLD,
    }


def measurement_list(
    request: Request,
    catalogs: Catalogs,
    sessions: sessionmaker[Session],
    params: Mapping[str, str],
) -> HTMLResponse:
    """The table of stored measurements, filtered by the non-empty `params`."""
    given = {k: v.strip() for k, v in params.items() if v.strip()}
    values = {name: given.get(name, "") for name in FILTERS}
    try:
        query = MeasurementQuery.model_validate(given)
    except ValidationError as exc:
        return render(request, "measurements.html", _list_context(values, _list_errors(exc)), 422)
    filters = history.filters_of(query, catalogs)
    page = history.listing(
        sessions, filters, limit=query.limit, offset=query.offset, after=query.after
    )
    ids = [m.id for m in page.items]
    sizes = {id_: _size(workload) for id_, workload in history.workloads(sessions, ids).items()}
    regressed = history.regressions(sessions, ids)
    context = _list_context(values, {}, page, given, sizes, regressed=regressed)
    return render(request, "measurements.html", context)


def _chart(catalogs: Catalogs, expectation: dict[str, object], measured: float) -> str | None:
    try:
        answer = ExpectedTime.model_validate(expectation, strict=False)
        return for_page(partial(roofline_svg, data_of(answer, chip_of(catalogs, answer), measured)))
    except (ValidationError, KeyError, UnknownName, EngineError):
        return None


def measurement_page(
    request: Request, catalogs: Catalogs, sessions: sessionmaker[Session], measurement_id: int
) -> HTMLResponse:
    """One stored measurement: its verdict (saying what the time covers), comparison, metadata
    and roofline chart."""
    try:
        stored = history.read(sessions, measurement_id)
    except UnknownName:
        return not_found(request, f"There is no measurement {measurement_id}.")
    workload = stored.workload
    context = {
        "m": stored,
        "covers": covers(str(workload.get("kind", "")), str(workload.get("phase", ""))),
        "chart": _chart(catalogs, stored.expectation, stored.measured_time_s),
        "again": workload_params(stored.workload, stored.chip.id)
        | {"measured_ms": f"{ms_from_seconds(stored.measured_time_s):.6g}"},
    }
    return render(request, "measurement.html", context)


def workload_page(
    request: Request,
    sessions: sessionmaker[Session],
    workload_key: str,
    *,
    baseline_id: int | None = None,
    baseline_branch: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    baseline_window: int = DEFAULT_WINDOW,
    confidence: float = DEFAULT_CONFIDENCE,
    axis: Axis = "run",
) -> HTMLResponse:
    """One workload's runs: history chart (run by run, or over time) and table, best,
    latest, baseline, regression."""
    try:
        comparison = history.compare(
            sessions,
            workload_key,
            baseline_id=baseline_id,
            baseline_branch=baseline_branch,
            threshold=threshold,
            window=baseline_window,
            confidence=confidence,
        )
    except UnknownName:
        return not_found(request, "No measurement of this workload is stored.")
    except EngineError as exc:
        return render(request, "error.html", {"title": "Bad request", "message": str(exc)}, 422)
    query = dict(request.query_params)  # the toggle keeps the comparison's settings
    context = {
        "c": comparison,
        "chart": for_page(partial(history_svg, comparison, by=axis)),
        "axis": axis,
        "axis_urls": {
            other: f"/history/{workload_key}?{urlencode(query | {'axis': other})}" for other in AXES
        },
        "baseline_branch": baseline_branch or "",
        "threshold": threshold,
        "baseline_window": baseline_window,
        "confidence": confidence,
        "writes_open": not request.app.state.write_tokens.owners,  # the false-alarm button
    }
    return render(request, "workload.html", context)


async def database_unavailable(request: Request, exc: Exception) -> Response:
    """503 while the database cannot be reached: a page for a browser, JSON otherwise, each
    with Retry-After. A database found empty (dropped and created anew while the service ran)
    is migrated again on the next request; any other SQL error is a bug, a 500."""
    database_errors.recover(request.app.state.database, exc)
    message = "The measurement database is unreachable; the calculations still work. Retry soon."
    retry = {"Retry-After": str(RETRY_AFTER_S)}
    if wants_html(request.headers):
        context = {"title": "Database unavailable", "message": message}
        response = render(request, "error.html", context, 503)
        response.headers.update(retry)
        return response
    body = {"detail": {"message": message, "type": "database_unavailable"}}
    return StrictJSONResponse(status_code=503, content=body, headers=retry)


async def unknown_address(request: Request, exc: Exception) -> Response:
    """404 of an address no route answers: a page with ways on for a browser, FastAPI's own
    JSON answer otherwise."""
    assert isinstance(exc, HTTPException)
    if not wants_html(request.headers):
        return await http_exception_handler(request, exc)
    message = f"There is no page at {request.url.path}."
    return render(request, "error.html", {"title": "Not found", "message": message}, 404)
