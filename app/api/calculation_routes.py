"""GET (transformer query parameters) and POST (any workload) calculation endpoints, registered
from one table: each differs from the others only in its path, its use case and its models.

These are the endpoints CI jobs call by the thousand, so each GET parses its query and each
answer is serialised by app/api/wire.py rather than by FastAPI's generic field-by-field path;
the schema FastAPI publishes is unchanged.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel

from app.api.wire import answer, parse_query, query_parameters
from app.http.budget import within_budget
from app.http.deps import JSON_BODY_ERRORS, CatalogsDep, JsonBody
from app.schemas.answers import (
    Check,
    ExpectedTime,
    MemoryFitAnswer,
    OptimalBatchAnswer,
    ScalingAnswer,
)
from app.schemas.queries import CheckQuery, ScalingQuery, TransformerQuery
from app.schemas.requests import CalculationRequest, CheckRequest, ScalingRequest
from app.services import expectations, planning
from app.services.catalogs import Catalogs

router = APIRouter(tags=["calculations"])

_ERRORS: dict[int | str, dict[str, str]] = {
    404: {"description": "Unknown chip, model or catalog version; with suggestions."},
    422: {"description": "A field is out of range; the error names it and the range."},
    503: {
        "description": "Retry later (Retry-After): the calculation ran past its time budget, "
        "or (ceilings=empirical) the database is unreachable."
    },
}


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One calculation at one path, by GET (a transformer query) and POST (a body)."""

    path: str
    name: str  # the operations are {name}_get and {name}_post
    calculate: Callable[[Catalogs, Any], BaseModel]
    answer: type[BaseModel]
    query: type[TransformerQuery]
    body: type[CalculationRequest]
    get_doc: str
    post_doc: str


ENDPOINTS = (
    Endpoint(
        "/expected-time",
        "expected_time",
        expectations.expected_time,
        ExpectedTime,
        TransformerQuery,
        CalculationRequest,
        "Roofline time of a transformer workload: max(FLOPs / peak, bytes / bandwidth).",
        "Roofline time of any workload (transformer or kernel).",
    ),
    Endpoint(
        "/memory-fit",
        "memory_fit",
        planning.memory,
        MemoryFitAnswer,
        TransformerQuery,
        CalculationRequest,
        "Memory per chip, whether it fits, the largest batch and the fewest chips.",
        "Memory per chip of a transformer workload (body form).",
    ),
    Endpoint(
        "/optimal-batch",
        "optimal_batch",
        planning.best_batch,
        OptimalBatchAnswer,
        TransformerQuery,
        CalculationRequest,
        "The smallest compute-bound batch that fits in memory, and the sweep behind it.",
        "The optimal batch of a transformer workload (body form).",
    ),
    Endpoint(
        "/check",
        "check",
        expectations.check,
        Check,
        CheckQuery,
        CheckRequest,
        "A measured time against the roofline: ratio, verdict and advice.",
        "A measured time of any workload against its roofline.",
    ),
    Endpoint(
        "/scaling",
        "scaling",
        planning.scale,
        ScalingAnswer,
        ScalingQuery,
        ScalingRequest,
        "Speedup and efficiency of a training step over chip counts (strong or weak scaling).",
        "The scaling curve of a training workload (body form).",
    ),
)


async def _answer(
    request: Request, catalogs: Catalogs, endpoint: Endpoint, body: CalculationRequest
) -> Response:
    """The endpoint's answer to `body`, calculated off the event loop within the time budget
    (app/http/budget.py), and kept for the next identical request unless it read measured
    ceilings: those come from the database, which may change them."""
    calculated = await within_budget(request, partial(endpoint.calculate, catalogs, body))
    cache = catalogs.answers if body.ceilings == "datasheet" else None
    return await answer(request, cache, calculated)


def _get(endpoint: Endpoint) -> Callable[..., Any]:
    async def get(request: Request, catalogs: CatalogsDep) -> Response:
        body = parse_query(request, endpoint.query).to_body()
        return await _answer(request, catalogs, endpoint, body)

    return get


def _post(endpoint: Endpoint) -> Callable[..., Any]:
    async def post(request: Request, body: Any, catalogs: CatalogsDep) -> Response:
        return await _answer(request, catalogs, endpoint, body)

    post.__annotations__["body"] = endpoint.body  # FastAPI reads the body's model from here
    return post


for _endpoint in ENDPOINTS:
    router.add_api_route(
        _endpoint.path,
        _get(_endpoint),
        methods=["GET"],
        name=f"{_endpoint.name}_get",
        description=_endpoint.get_doc,
        response_model=_endpoint.answer,
        responses=_ERRORS,
        openapi_extra=query_parameters(_endpoint.query),
    )
    router.add_api_route(
        _endpoint.path,
        _post(_endpoint),
        methods=["POST"],
        name=f"{_endpoint.name}_post",
        description=_endpoint.post_doc,
        response_model=_endpoint.answer,
        responses=_ERRORS | JSON_BODY_ERRORS,
        dependencies=[JsonBody],
    )
