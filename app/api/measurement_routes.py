"""Store, list and read measurements; compare runs of a workload; re-judge a stored one."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Query, Response

from app.columns import KEY_LENGTH
from app.engine import InvalidInput
from app.engine.compare import DEFAULT_CONFIDENCE, DEFAULT_THRESHOLD, DEFAULT_WINDOW
from app.http.deps import JSON_BODY_ERRORS, UNAVAILABLE, CatalogsDep, JsonBody, SessionsDep
from app.http.params import (
    BaselineId,
    BaselineWindow,
    Confidence,
    MeasurementId,
    Text,
    Threshold,
    WorkloadKey,
)
from app.schemas.comparison_bodies import Alarm, FalseAlarmIn
from app.schemas.measurement_bodies import (
    GATE_CHOICES,
    MeasurementIn,
    MeasurementOut,
    MeasurementPage,
    MeasurementQuery,
    Rejudged,
    WorkloadComparison,
)
from app.security import UNAUTHORIZED, WriterDep
from app.services import alarms, history, recording

router = APIRouter(tags=["measurements"])
FAIL_ON_LENGTH = 500  # characters of POST /measurements' fail_on

_NOT_FOUND: dict[int | str, dict[str, str]] = {
    404: {"description": "No such measurement, chip, model or catalog version."},
    **UNAVAILABLE,
}


@router.post(
    "/measurements",
    summary="Judge and store a measurement",
    status_code=201,
    response_model=MeasurementOut,
    responses={
        412: {"model": MeasurementOut, "description": "Stored, but the gate failed."},
        **UNAUTHORIZED,
        **_NOT_FOUND,
        **JSON_BODY_ERRORS,
    },
    dependencies=[JsonBody],
)
async def create(
    body: MeasurementIn,
    writer: WriterDep,
    catalogs: CatalogsDep,
    sessions: SessionsDep,
    *,
    fail_on: Annotated[
        str | None,
        Query(
            max_length=FAIL_ON_LENGTH,
            description="Comma-separated verdicts and/or 'regression'. The measurement is "
            "stored either way; when one applies the answer is 412 instead of 201, so that "
            "`curl --fail-with-body` fails a CI job.",
        ),
    ] = None,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias=recording.IDEMPOTENCY_KEY,
            min_length=1,
            max_length=KEY_LENGTH,
            description="A retry with the same key (and token) stores nothing and answers "
            "the measurement stored first.",
        ),
    ] = None,
) -> Response:
    """Judge a measured runtime against the roofline and store it with its verdict."""
    choices = None if fail_on is None else _gate_choices(fail_on)  # before anything is stored
    # The request's one hop off the event loop (where waiting for the commit would hold up
    # every other request): judging, then storing and comparing in one transaction. On
    # asyncio's default executor, whose few threads queue concurrent writes for the group
    # commit rather than have Starlette's 40 judge at once and contend for the GIL and the
    # SQLite writers' lock (docs/performance.md, "Writes").
    stored = await asyncio.get_running_loop().run_in_executor(
        None,
        partial(
            recording.record,
            catalogs,
            sessions,
            body,
            writer=writer,
            idempotency_key=idempotency_key,
        ),
    )
    status = 201
    if choices is not None:
        stored = recording.gate(stored, choices)
        status = 412 if stored.gate and stored.gate.failed else 201
    # serialised once: the answer was validated when built (inside the transaction), so it
    # is not validated again against the response model
    return Response(stored.model_dump_json().encode(), status, media_type="application/json")


def _gate_choices(fail_on: str) -> frozenset[str]:
    choices = frozenset(part.strip() for part in fail_on.split(",") if part.strip())
    unknown = choices - GATE_CHOICES
    if unknown or not choices:
        raise InvalidInput(
            "fail_on", f"allowed: {', '.join(sorted(GATE_CHOICES))}; got {fail_on!r}"
        )
    return choices


@router.get(
    "/measurements",
    summary="List stored measurements",
    response_model=MeasurementPage,
    responses=UNAVAILABLE,
)
def list_(
    query: Annotated[MeasurementQuery, Query()], catalogs: CatalogsDep, sessions: SessionsDep
) -> MeasurementPage:
    """Stored measurements, newest first, filtered; `chip` and `model` are catalog ids or
    aliases, in any case. Page on with `cursor` = the answer's `next`, until it is null.

    A browser (Accept preferring text/html) gets the history page instead."""
    filters = history.filters_of(query, catalogs)
    return history.listing(
        sessions, filters, limit=query.limit, offset=query.offset, after=query.after
    )


@router.get(
    "/measurements/{measurement_id}",
    summary="One stored measurement",
    response_model=MeasurementOut,
    responses=_NOT_FOUND,
)
def read(measurement_id: MeasurementId, sessions: SessionsDep) -> MeasurementOut:
    """One stored measurement, as judged when stored, compared with the run before it.

    A browser (Accept preferring text/html) gets the measurement's page instead."""
    return history.read(sessions, measurement_id)


@router.post(
    "/measurements/{measurement_id}/rejudge",
    summary="Judge a stored measurement again",
    response_model=Rejudged,
    responses=_NOT_FOUND | UNAUTHORIZED,
)
def rejudge(
    measurement_id: MeasurementId,
    _writer: WriterDep,
    catalogs: CatalogsDep,
    sessions: SessionsDep,
    catalog_version: Text = None,
) -> Rejudged:
    """Judge a stored measurement again against another catalog version (default: current).

    The stored judgement is left as it was.
    """
    return recording.rejudge(catalogs, sessions, measurement_id, catalog_version)


@router.post(
    "/measurements/{measurement_id}/false-alarm",
    summary="Mark a stored run's alarm false",
    response_model=Alarm,
    responses={
        409: {"description": "The run raised no alarm when it was stored."},
        **_NOT_FOUND,
        **UNAUTHORIZED,
    },
)
def false_alarm(
    measurement_id: MeasurementId,
    writer: WriterDep,
    sessions: SessionsDep,
    body: FalseAlarmIn | None = None,
) -> Alarm:
    """Mark the alarm the regression gate raised on a stored run (a regression or a suspected
    one) as a false alarm, with an optional note. The measurement itself is left exactly as
    stored and still counts in later baseline windows; the workload's gate record counts the
    mark. Marking again keeps the first mark."""
    try:
        return alarms.mark_false(sessions, measurement_id, writer, body.note if body else None)
    except alarms.NoAlarm as error:
        raise HTTPException(status_code=409, detail={"message": error.message}) from error


@router.get(
    "/workloads/{workload_key}",
    summary="Every run of one workload",
    response_model=WorkloadComparison,
    responses=_NOT_FOUND,
)
def compare(
    workload_key: WorkloadKey,
    sessions: SessionsDep,
    *,
    baseline_id: BaselineId = None,
    baseline_branch: Text = None,
    threshold: Threshold = DEFAULT_THRESHOLD,
    baseline_window: BaselineWindow = DEFAULT_WINDOW,
    confidence: Confidence = DEFAULT_CONFIDENCE,
) -> WorkloadComparison:
    """Every run of one workload on one chip: history, best, latest, means, regression, and
    the fixed overhead fitted across the workload's sizes.

    A browser (Accept preferring text/html) gets the workload's history page instead."""
    return history.compare(
        sessions,
        workload_key,
        baseline_id=baseline_id,
        baseline_branch=baseline_branch,
        threshold=threshold,
        window=baseline_window,
        confidence=confidence,
    )
