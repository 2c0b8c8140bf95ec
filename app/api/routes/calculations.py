"""GET (transformer query parameters) and POST (any workload) calculation endpoints."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

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

router = APIRouter(tags=["calculations"])

_ERRORS: dict[int | str, dict[str, str]] = {
    404: {"description": "Unknown chip, model or catalog version; with suggestions."},
    422: {"description": "A field is out of range; the error names it and the range."},
}


@router.get("/expected-time", response_model=ExpectedTime, responses=_ERRORS)
async def expected_time_get(
    query: Annotated[TransformerQuery, Query()], catalogs: CatalogsDep
) -> ExpectedTime:
    """Roofline time of a transformer workload: max(FLOPs / peak, bytes / bandwidth)."""
    return calculations.expected_time(catalogs, query.to_request())


@router.post("/expected-time", response_model=ExpectedTime, responses=_ERRORS)
async def expected_time_post(body: CalculationRequest, catalogs: CatalogsDep) -> ExpectedTime:
    """Roofline time of any workload (transformer or kernel)."""
    return calculations.expected_time(catalogs, body)


@router.get("/memory-fit", response_model=MemoryFitAnswer, responses=_ERRORS)
async def memory_fit_get(
    query: Annotated[TransformerQuery, Query()], catalogs: CatalogsDep
) -> MemoryFitAnswer:
    """Memory per chip, whether it fits, the largest batch and the fewest chips."""
    return calculations.memory(catalogs, query.to_request())


@router.post("/memory-fit", response_model=MemoryFitAnswer, responses=_ERRORS)
async def memory_fit_post(body: CalculationRequest, catalogs: CatalogsDep) -> MemoryFitAnswer:
    """Memory per chip of a transformer workload (body form)."""
    return calculations.memory(catalogs, body)


@router.get("/optimal-batch", response_model=OptimalBatchAnswer, responses=_ERRORS)
async def optimal_batch_get(
    query: Annotated[TransformerQuery, Query()], catalogs: CatalogsDep
) -> OptimalBatchAnswer:
    """The smallest compute-bound batch that fits in memory, and the sweep behind it."""
    return calculations.best_batch(catalogs, query.to_request())


@router.post("/optimal-batch", response_model=OptimalBatchAnswer, responses=_ERRORS)
async def optimal_batch_post(body: CalculationRequest, catalogs: CatalogsDep) -> OptimalBatchAnswer:
    """The optimal batch of a transformer workload (body form)."""
    return calculations.best_batch(catalogs, body)


@router.get("/check", response_model=Check, responses=_ERRORS)
async def check_get(query: Annotated[CheckQuery, Query()], catalogs: CatalogsDep) -> Check:
    """A measured time against the roofline: ratio, verdict and advice."""
    return calculations.check(catalogs, query.to_check())


@router.post("/check", response_model=Check, responses=_ERRORS)
async def check_post(body: CheckRequest, catalogs: CatalogsDep) -> Check:
    """A measured time of any workload against its roofline."""
    return calculations.check(catalogs, body)


@router.get("/scaling", response_model=ScalingAnswer, responses=_ERRORS)
async def scaling_get(
    query: Annotated[ScalingQuery, Query()], catalogs: CatalogsDep
) -> ScalingAnswer:
    """Speedup and efficiency of a training step over chip counts (strong or weak scaling)."""
    return calculations.scale(catalogs, query.to_scaling())


@router.post("/scaling", response_model=ScalingAnswer, responses=_ERRORS)
async def scaling_post(body: ScalingRequest, catalogs: CatalogsDep) -> ScalingAnswer:
    """The scaling curve of a training workload (body form)."""
    return calculations.scale(catalogs, body)
