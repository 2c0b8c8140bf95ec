"""Store, list and read measurements; compare runs of a workload; re-judge a stored one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Path, Query, Request
from fastapi.responses import JSONResponse, Response

from app.api import measurements
from app.api.deps import CatalogsDep, SessionsDep
from app.api.errors import StrictJSONResponse
from app.api.measurement_schemas import (
    DEFAULT_THRESHOLD,
    GATE_CHOICES,
    MeasurementIn,
    MeasurementOut,
    MeasurementPage,
    MeasurementQuery,
    Rejudged,
    WorkloadComparison,
)
from app.db.availability import UNAVAILABLE
from app.engine import InvalidInput
from app.security import UNAUTHORIZED, WriterDep
from app.web import pages

router = APIRouter(tags=["measurements"])

_NOT_FOUND: dict[int | str, dict[str, str]] = {
    404: {"description": "No such measurement, chip, model or catalog version."},
    **UNAVAILABLE,
}
_Id = Annotated[int, Path(ge=1, le=2**31 - 1)]
_Text = Annotated[str | None, Query(min_length=1, max_length=200)]
_Threshold = Annotated[
    float, Query(gt=0, le=100, description="Slower by more than this fraction is a regression.")
]


@router.post(
    "/measurements",
    status_code=201,
    response_model=MeasurementOut,
    responses={
        412: {"model": MeasurementOut, "description": "Stored, but the gate failed."},
        **UNAUTHORIZED,
        **_NOT_FOUND,
    },
)
def create(
    body: MeasurementIn,
    writer: WriterDep,
    catalogs: CatalogsDep,
    sessions: SessionsDep,
    *,
    fail_on: Annotated[
        str | None,
        Query(
            max_length=500,
            description="Comma-separated verdicts and/or 'regression'. The measurement is "
            "stored either way; when one applies the answer is 412 instead of 201, so that "
            "`curl --fail-with-body` fails a CI job.",
        ),
    ] = None,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=200,
            description="A retry with the same key (and token) stores nothing and answers "
            "the measurement stored first.",
        ),
    ] = None,
) -> MeasurementOut | JSONResponse:
    """Judge a measured runtime against the roofline and store it with its verdict."""
    choices = None if fail_on is None else _gate_choices(fail_on)  # before anything is stored
    stored = measurements.record(
        catalogs, sessions, body, writer=writer, idempotency_key=idempotency_key
    )
    if choices is None:
        return stored
    gated = measurements.gate(stored, choices)
    status = 412 if gated.gate and gated.gate.failed else 201
    return StrictJSONResponse(status_code=status, content=gated.model_dump(mode="json"))


def _gate_choices(fail_on: str) -> frozenset[str]:
    choices = frozenset(part.strip() for part in fail_on.split(",") if part.strip())
    unknown = choices - GATE_CHOICES
    if unknown or not choices:
        raise InvalidInput(
            "fail_on", f"allowed: {', '.join(sorted(GATE_CHOICES))}; got {fail_on!r}"
        )
    return choices


@router.get("/measurements", response_model=MeasurementPage, responses=UNAVAILABLE)
def list_(
    query: Annotated[MeasurementQuery, Query()], sessions: SessionsDep, request: Request
) -> MeasurementPage | Response:
    """Stored measurements, newest first, filtered; `chip` and `model` are catalog ids.

    A browser (Accept preferring text/html) gets the history page instead."""
    if pages.wants_html(request):
        return pages.measurement_list(request, sessions, request.query_params)
    filters = measurements.filters_of(query)
    return measurements.listing(sessions, filters, limit=query.limit, offset=query.offset)


@router.get("/measurements/{measurement_id}", response_model=MeasurementOut, responses=_NOT_FOUND)
def read(
    measurement_id: _Id, sessions: SessionsDep, catalogs: CatalogsDep, request: Request
) -> MeasurementOut | Response:
    """One stored measurement, as judged when stored, compared with the run before it.

    A browser (Accept preferring text/html) gets the measurement's page instead."""
    if pages.wants_html(request):
        return pages.measurement_page(request, catalogs, sessions, measurement_id)
    return measurements.read(sessions, measurement_id)


@router.post(
    "/measurements/{measurement_id}/rejudge",
    response_model=Rejudged,
    responses=_NOT_FOUND | UNAUTHORIZED,
)
def rejudge(
    measurement_id: _Id,
    _writer: WriterDep,
    catalogs: CatalogsDep,
    sessions: SessionsDep,
    catalog_version: _Text = None,
) -> Rejudged:
    """Judge a stored measurement again against another catalog version (default: current).

    The stored judgement is left as it was.
    """
    return measurements.rejudge(catalogs, sessions, measurement_id, catalog_version)


@router.get("/workloads/{workload_key}", response_model=WorkloadComparison, responses=_NOT_FOUND)
def compare(
    workload_key: Annotated[str, Path(max_length=64)],
    sessions: SessionsDep,
    *,
    request: Request,
    baseline_id: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
    baseline_branch: _Text = None,
    threshold: _Threshold = DEFAULT_THRESHOLD,
) -> WorkloadComparison | Response:
    """Every run of one workload on one chip: history, best, latest, means, regression, and
    the fixed overhead fitted across the workload's sizes.

    A browser (Accept preferring text/html) gets the workload's history page instead."""
    if pages.wants_html(request):
        return pages.workload_page(
            request,
            sessions,
            workload_key,
            baseline_id=baseline_id,
            baseline_branch=baseline_branch,
            threshold=threshold,
        )
    return measurements.compare(
        sessions,
        workload_key,
        baseline_id=baseline_id,
        baseline_branch=baseline_branch,
        threshold=threshold,
    )
