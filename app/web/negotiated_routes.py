"""The pages a browser gets at the JSON API's measurement addresses (GET /measurements,
/measurements/{id}, /workloads/{key}): these routes match only a request whose Accept header
prefers HTML, and are tried before the JSON routes, which answer everyone else. Their
parameters are the JSON routes' own (app/http/params.py), so a bad one is refused alike."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from starlette.datastructures import Headers
from starlette.routing import Match
from starlette.types import Scope

from app.engine.compare import DEFAULT_CONFIDENCE, DEFAULT_THRESHOLD, DEFAULT_WINDOW
from app.http.deps import CatalogsDep, SessionsDep
from app.http.negotiation import wants_html
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
from app.web import pages


class BrowserRoute(APIRoute):
    """A route that matches only requests preferring text/html over JSON (a browser)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is not Match.NONE and not wants_html(Headers(scope=scope)):
            return Match.NONE, {}
        return match, child


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
