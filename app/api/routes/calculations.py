"""GET (transformer query parameters) and POST (any workload) calculation endpoints.

These are the endpoints CI jobs call by the thousand, so each GET parses its query and each
answer is serialised by app/api/wire.py rather than by FastAPI's generic field-by-field path;
the schema FastAPI publishes is unchanged.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from app.api import calculations
from app.api.deps import CatalogsDep
from app.api.schemas import (
    CalculationRequest,
    Check,
    CheckQuery,
    CheckRequest,
    ExpectedTime,
    MemoryFitAnswer,
    OptimalBatchAnswer,
    ScalingAnswer,
    ScalingQuery,
    ScalingRequest,
    TransformerQuery,
)
from app.api.wire import answer, parse_query, query_parameters

router = APIRouter(tags=["calculations"])

_ERRORS: dict[int | str, dict[str, str]] = {
    404: {"description": "Unknown chip, model or catalog version; with suggestions."},
    422: {"description": "A field is out of range; the error names it and the range."},
}
_TRANSFORMER_QUERY = query_parameters(TransformerQuery)


def _transformer(request: Request) -> CalculationRequest:
    """A GET's transformer query as the equivalent POST body."""
    return parse_query(request, TransformerQuery).to_request()


@router.get(
    "/expected-time",
    response_model=ExpectedTime,
    responses=_ERRORS,
    openapi_extra=_TRANSFORMER_QUERY,
)
async def expected_time_get(request: Request, catalogs: CatalogsDep) -> Response:
    """Roofline time of a transformer workload: max(FLOPs / peak, bytes / bandwidth)."""
    return await answer(
        request,
        catalogs.answers,
        lambda: calculations.expected_time(catalogs, _transformer(request)),
    )


@router.post("/expected-time", response_model=ExpectedTime, responses=_ERRORS)
async def expected_time_post(
    request: Request, body: CalculationRequest, catalogs: CatalogsDep
) -> Response:
    """Roofline time of any workload (transformer or kernel)."""
    return await answer(
        request, catalogs.answers, lambda: calculations.expected_time(catalogs, body)
    )


@router.get(
    "/memory-fit",
    response_model=MemoryFitAnswer,
    responses=_ERRORS,
    openapi_extra=_TRANSFORMER_QUERY,
)
async def memory_fit_get(request: Request, catalogs: CatalogsDep) -> Response:
    """Memory per chip, whether it fits, the largest batch and the fewest chips."""
    return await answer(
        request,
        catalogs.answers,
        lambda: calculations.memory(catalogs, _transformer(request)),
    )


@router.post("/memory-fit", response_model=MemoryFitAnswer, responses=_ERRORS)
async def memory_fit_post(
    request: Request, body: CalculationRequest, catalogs: CatalogsDep
) -> Response:
    """Memory per chip of a transformer workload (body form)."""
    return await answer(request, catalogs.answers, lambda: calculations.memory(catalogs, body))


@router.get(
    "/optimal-batch",
    response_model=OptimalBatchAnswer,
    responses=_ERRORS,
    openapi_extra=_TRANSFORMER_QUERY,
)
async def optimal_batch_get(request: Request, catalogs: CatalogsDep) -> Response:
    """The smallest compute-bound batch that fits in memory, and the sweep behind it."""
    return await answer(
        request,
        catalogs.answers,
        lambda: calculations.best_batch(catalogs, _transformer(request)),
    )


@router.post("/optimal-batch", response_model=OptimalBatchAnswer, responses=_ERRORS)
async def optimal_batch_post(
    request: Request, body: CalculationRequest, catalogs: CatalogsDep
) -> Response:
    """The optimal batch of a transformer workload (body form)."""
    return await answer(request, catalogs.answers, lambda: calculations.best_batch(catalogs, body))


@router.get(
    "/check",
    response_model=Check,
    responses=_ERRORS,
    openapi_extra=query_parameters(CheckQuery),
)
async def check_get(request: Request, catalogs: CatalogsDep) -> Response:
    """A measured time against the roofline: ratio, verdict and advice."""
    return await answer(
        request,
        catalogs.answers,
        lambda: calculations.check(catalogs, parse_query(request, CheckQuery).to_check()),
    )


@router.post("/check", response_model=Check, responses=_ERRORS)
async def check_post(request: Request, body: CheckRequest, catalogs: CatalogsDep) -> Response:
    """A measured time of any workload against its roofline."""
    return await answer(request, catalogs.answers, lambda: calculations.check(catalogs, body))


@router.get(
    "/scaling",
    response_model=ScalingAnswer,
    responses=_ERRORS,
    openapi_extra=query_parameters(ScalingQuery),
)
async def scaling_get(request: Request, catalogs: CatalogsDep) -> Response:
    """Speedup and efficiency of a training step over chip counts (strong or weak scaling)."""
    return await answer(
        request,
        catalogs.answers,
        lambda: calculations.scale(catalogs, parse_query(request, ScalingQuery).to_scaling()),
    )


@router.post("/scaling", response_model=ScalingAnswer, responses=_ERRORS)
async def scaling_post(request: Request, body: ScalingRequest, catalogs: CatalogsDep) -> Response:
    """The scaling curve of a training workload (body form)."""
    return await answer(request, catalogs.answers, lambda: calculations.scale(catalogs, body))
