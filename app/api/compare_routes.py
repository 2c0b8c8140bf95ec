"""GET and POST /compare: one transformer workload over several chips, ranked."""

from __future__ import annotations

from enum import Enum
from functools import partial
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response

from app.api.query_models import query_of, query_parameters
from app.api.stored_answers import answer
from app.http.budget import within_budget
from app.http.deps import JSON_BODY_ERRORS, CatalogsDep, JsonBody
from app.schemas.comparison import CompareQuery, CompareRequest, Comparison
from app.services.chip_comparison import compare

router = APIRouter(tags=list[str | Enum](["calculations"]))

_ERRORS: dict[int | str, dict[str, str]] = {
    404: {"description": "Unknown chip, model or catalog version; with suggestions."},
    422: {
        "description": "A field is out of range (chips: none, over 16, or one chip twice; "
        "prices: a price out of range or for a chip not compared); the error names it."
    },
    503: {"description": "Retry later (Retry-After): the calculation ran past its time budget."},
}


async def _answer(request: Request, catalogs: CatalogsDep, body: CompareRequest) -> Response:
    calculated = await within_budget(request, partial(compare, catalogs, body))
    return await answer(request, catalogs.answers, calculated)


@router.get(
    "/compare",
    name="compare_get",
    summary="Compare chips for a transformer workload",
    description="A transformer workload on each of several chips: time, tokens/s, fit, "
    "energy per token and cost per million tokens, ranked by realistic tokens/s.",
    response_model=Comparison,
    responses=_ERRORS,
    openapi_extra=query_parameters(CompareQuery),
)
async def compare_get(
    request: Request,
    query: Annotated[CompareQuery, Depends(query_of(CompareQuery))],
    catalogs: CatalogsDep,
) -> Response:
    return await _answer(request, catalogs, query.to_body())


@router.post(
    "/compare",
    name="compare_post",
    summary="Compare chips for a transformer workload (body)",
    description="The comparison of GET /compare (body form; prices as a dict).",
    response_model=Comparison,
    responses=_ERRORS | JSON_BODY_ERRORS,
    dependencies=[JsonBody],
)
async def compare_post(request: Request, body: CompareRequest, catalogs: CatalogsDep) -> Response:
    return await _answer(request, catalogs, body)
