"""The pages a browser gets at the JSON API's GET addresses: these routes match only a request
whose Accept header prefers HTML (and whose query does not say `format=json`), and are tried
before the JSON routes, which answer everyone else. The measurements (GET /measurements,
/measurements/{id}, /workloads/{key}) take the JSON routes' own parameters
(app/http/params.py), so a bad one is refused alike; the catalog's chips and models have
pages of their own; a calculation's address leads to the form that asks it (/compare to the
comparison's, the others to the check form's), with the question's parameters."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from starlette.datastructures import Headers
from starlette.routing import Match
from starlette.types import Scope

from app.engine.compare import DEFAULT_CONFIDENCE, DEFAULT_THRESHOLD, DEFAULT_WINDOW
from app.http.deps import CatalogsDep, OptionalSessionsDep, SessionsDep
from app.http.negotiation import wants_page
from app.http.params import (
    BaselineId,
    BaselineWindow,
    Confidence,
    MeasurementId,
    Text,
    Threshold,
    WorkloadKey,
)
from app.schemas.measurement_bodies import MeasurementQuery
from app.web import catalog_pages, pages


class BrowserRoute(APIRoute):
    """A route that matches only requests preferring text/html over JSON (a browser), unless
    the query asks for the JSON (`format=json`); a parameter out of range is a 422 page
    naming it, as the JSON route's 422 does."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is not Match.NONE and not wants_page(Headers(scope=scope), scope["query_string"]):
            return Match.NONE, {}
        return match, child

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page_or_refusal(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                return pages.bad_parameters(request, exc.errors())

        return page_or_refusal


router = APIRouter(include_in_schema=False, route_class=BrowserRoute)


@router.get("/measurements", response_class=HTMLResponse)
def measurement_list(
    request: Request,
    _query: Annotated[MeasurementQuery, Query()],
    catalogs: CatalogsDep,
    sessions: SessionsDep,
) -> HTMLResponse:
    """The history page: stored measurements, filtered as the query says."""
    return pages.measurement_list(request, catalogs, sessions, request.query_params)


@router.get("/measurements/{measurement_id}", response_class=HTMLResponse)
def measurement(
    request: Request, measurement_id: MeasurementId, catalogs: CatalogsDep, sessions: SessionsDep
) -> HTMLResponse:
    """One stored measurement's page."""
    return pages.measurement_page(request, catalogs, sessions, measurement_id)


@router.get("/workloads/{workload_key}", response_class=HTMLResponse)
def workload(
    request: Request,
    workload_key: WorkloadKey,
    sessions: SessionsDep,
    *,
    baseline_id: BaselineId = None,
    baseline_branch: Text = None,
    threshold: Threshold = DEFAULT_THRESHOLD,
    baseline_window: BaselineWindow = DEFAULT_WINDOW,
    confidence: Confidence = DEFAULT_CONFIDENCE,
) -> HTMLResponse:
    """One workload's history page."""
    return pages.workload_page(
        request,
        sessions,
        workload_key,
        baseline_id=baseline_id,
        baseline_branch=baseline_branch,
        threshold=threshold,
        baseline_window=baseline_window,
        confidence=confidence,
    )


_Name = Annotated[str, Path(max_length=100)]
_Version = Annotated[str | None, Query(max_length=64)]
# the calculations a GET asks (a transformer's query, the check form's parameters)
CALCULATIONS = (
    "/check",
    "/expected-time",
    "/memory-fit",
    "/max-context",
    "/optimal-batch",
    "/scaling",
)


@router.get("/chips", response_class=HTMLResponse)
def chips(
    request: Request, catalogs: CatalogsDep, catalog_version: _Version = None
) -> HTMLResponse:
    """The chips side by side, each linking to its page (as GET /catalog)."""
    return catalog_pages.chip_index(request, catalogs, catalog_version)


@router.get("/chips/{chip}", response_class=HTMLResponse)
def chip(
    request: Request,
    chip: _Name,
    catalogs: CatalogsDep,
    sessions: OptionalSessionsDep,
    catalog_version: _Version = None,
) -> HTMLResponse:
    """One chip's page: its figures, their sources, the ceilings measured on it."""
    return catalog_pages.chip_page(request, catalogs, sessions, chip, catalog_version)


@router.get("/models", response_class=HTMLResponse)
def models(request: Request, catalogs: CatalogsDep) -> HTMLResponse:
    """The models side by side, each linking to its page."""
    return catalog_pages.model_index(request, catalogs)


@router.get("/models/{model}", response_class=HTMLResponse)
def model(request: Request, model: _Name, catalogs: CatalogsDep) -> HTMLResponse:
    """One model's page: shape, parameter counts, memory per dtype, links to ask about it."""
    return catalog_pages.model_page(request, catalogs, model)


@router.get("/compare")
def compare(request: Request) -> RedirectResponse:
    """The comparison's page, with the question asked (its fields are GET /compare's)."""
    return RedirectResponse(_with_query("/comparison", request), status_code=303)


@router.get("/check/table")
def check_table() -> RedirectResponse:
    """The benchmark table's page, where a table is pasted or uploaded (the JSON route takes
    a POST alone)."""
    return RedirectResponse("/table", status_code=303)


def _to_the_form(request: Request) -> RedirectResponse:
    """The check form with the question's parameters: its answer, when they make one."""
    return RedirectResponse(_with_query("/", request), status_code=303)


for _path in CALCULATIONS:
    router.add_api_route(_path, _to_the_form, methods=["GET"], response_class=RedirectResponse)


def _with_query(path: str, request: Request) -> str:
    query = request.url.query
    return f"{path}?{query}" if query else path
