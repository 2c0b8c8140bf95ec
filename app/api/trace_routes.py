"""POST /check/trace: a torch.profiler trace (Chrome-trace JSON recorded with
record_shapes=True) judged op by op against a chip's roofline (docs/api.md)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from app.engine import Software
from app.engine.trace_events import HOW, NotATrace, TooManyEvents
from app.http.deps import JSON_BODY_ERRORS, CatalogsDep, JsonBody
from app.http.isolated import Isolated, OverMemory, OverTime
from app.http.responses import RETRY_AFTER_S, StrictJSONResponse
from app.schemas.trace_answers import TraceCheck
from app.services import trace_checks
from app.services.trace_devices import DeviceMismatch

router = APIRouter(tags=["calculations"])

_BODY = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["traceEvents"],
                "description": f"The file torch.profiler's export_chrome_trace writes: {HOW}.",
            }
        }
    },
}
Refused = NotATrace | TooManyEvents | DeviceMismatch | OverMemory | OverTime


def rejection(error: Refused) -> Response:
    """413 for a trace over the bounds of events or memory, 503 for one over the time budget,
    422 for JSON that is not a trace or for a trace that did not run on the chip."""
    if isinstance(error, (TooManyEvents, OverMemory)):
        return StrictJSONResponse(status_code=413, content={"detail": {"message": str(error)}})
    if isinstance(error, OverTime):
        return StrictJSONResponse(
            status_code=503,
            content={"detail": {"message": str(error), "type": "over_budget"}},
            headers={"Retry-After": str(RETRY_AFTER_S)},
        )
    if isinstance(error, DeviceMismatch):
        mismatch = [{"loc": ["query", "chip"], "msg": str(error), "type": "device_mismatch"}]
        return StrictJSONResponse(status_code=422, content={"detail": mismatch})
    detail = [{"loc": ["body"], "msg": str(error), "type": "not_a_trace"}]
    return StrictJSONResponse(status_code=422, content={"detail": detail})


@router.post(
    "/check/trace",
    response_model=TraceCheck,
    name="check_trace",
    summary="Judge a PyTorch profiler trace, op by op",
    dependencies=[JsonBody],
    responses={
        404: {"description": "Unknown chip; with suggestions."},
        413: {
            "description": "Over ROOFCHECK_MAX_TRACE_BYTES, too many events, or more memory "
            "than ROOFCHECK_TRACE_MEMORY_BYTES to analyse."
        },
        415: JSON_BODY_ERRORS[415],
        422: {
            "description": "Not JSON, not a torch.profiler trace with shapes, or a trace "
            "without GPU kernel events (not allow_device_mismatch)."
        },
        503: {
            "description": "The analysis ran past ROOFCHECK_TRACE_BUDGET_S (Retry-After); the "
            "message says how to record a smaller trace."
        },
    },
    openapi_extra={"requestBody": _BODY},
)
async def check_trace(
    request: Request,
    catalogs: CatalogsDep,
    chip: Annotated[str, Query(min_length=1, max_length=100, description="e.g. h100, a100.")],
    stack: Annotated[
        Software, Query(description="Whose published runs the realistic times assume.")
    ] = Software.EAGER,
    allow_device_mismatch: Annotated[
        bool,
        Query(
            description="Judge a trace without GPU kernel events (a CPU run) against the "
            "chip anyway; the answer's warnings say so first. Without it that is a 422."
        ),
    ] = False,
) -> Response:
    """Each operator's measured time beside its roofline time, sorted by time lost, with the
    verdict per operator and for the whole. Read and judged in a process of its own, within
    the trace's budget of time and memory."""
    body = await request.body()
    try:
        work = trace_checks.work(catalogs, chip, stack, allow_device_mismatch=allow_device_mismatch)
        analyses: Isolated = request.app.state.traces
        answer = await analyses.run(work, body)
    except (NotATrace, TooManyEvents, DeviceMismatch, OverMemory, OverTime) as error:
        return rejection(error)
    return Response(answer.model_dump_json(), media_type="application/json")
