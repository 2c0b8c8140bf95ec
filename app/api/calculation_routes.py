"""GET (transformer query parameters) and POST (any workload) calculation endpoints, registered
from one table: each differs from the others only in its path, its use case and its models.

Each answer is stored, and a repeated request answered from the store before it reaches
these routes (app/api/stored_answers.py).
"""

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from enum import Enum
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError

from app.api.query_models import query_of, query_parameters
from app.api.stored_answers import answer
from app.engine import Software
from app.http.budget import within_budget
from app.http.deps import JSON_BODY_ERRORS, CatalogsDep, JsonBody, json_body
from app.http.request_text import is_json
from app.http.responses import StrictJSONResponse
from app.http.tables import judged_table
from app.schemas.answers import Check, ExpectedTime
from app.schemas.planning_answers import (
    MaxContextAnswer,
    MemoryFitAnswer,
    OptimalBatchAnswer,
    ScalingAnswer,
)
from app.schemas.planning_requests import MaxContextRequest, MemoryFitRequest
from app.schemas.queries import (
    CheckQuery,
    MaxContextQuery,
    MemoryFitQuery,
    OptimalBatchQuery,
    ScalingQuery,
    TransformerQuery,
)
from app.schemas.requests import (
    STACK_DEFAULT,
    CalculationRequest,
    CheckRequest,
    OptimalBatchRequest,
    ScalingRequest,
    TransformerWorkload,
)
from app.schemas.table_bodies import MAX_ROWS, TableCheck
from app.services import expectations, planning, table
from app.services.catalogs import Catalogs

_TAGS: list[str | Enum] = ["calculations"]
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
    summaries: tuple[str, str]  # /docs' titles of the GET and the POST
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
        ("Expected time of a transformer workload", "Expected time of any workload"),
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
        ("Memory per chip and what fits", "Memory per chip and what fits (body)"),
        planning.memory_fit,
        MemoryFitAnswer,
        MemoryFitQuery,
        MemoryFitRequest,
        "Memory per chip, whether it fits, the largest batch and the fewest chips; with "
        "options=true, each weight and KV-cache dtype the chip can use.",
        "Memory per chip of a transformer workload (body form).",
    ),
    Endpoint(
        "/max-context",
        "max_context",
        ("Longest context of a decode step", "Longest context of a decode step (body)"),
        planning.max_context,
        MaxContextAnswer,
        MaxContextQuery,
        MaxContextRequest,
        "The longest context a decode step holds at its batch: in memory, within max_tpot_ms "
        "and the model's positions; what sets it, and the step there.",
        "The longest context of a transformer decode step (body form; no seq_len).",
    ),
    Endpoint(
        "/optimal-batch",
        "optimal_batch",
        ("Optimal batch of a transformer workload", "Optimal batch (body)"),
        planning.optimal_batch,
        OptimalBatchAnswer,
        OptimalBatchQuery,
        OptimalBatchRequest,
        "The smallest compute-bound batch that fits in memory, and the sweep behind it.",
        "The optimal batch of a transformer workload (body form).",
    ),
    Endpoint(
        "/check",
        "check",
        ("Judge a measured time of a transformer", "Judge a measured time of any workload"),
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
        ("Scaling of a training step over chip counts", "Scaling of a training step (body)"),
        planning.scaling,
        ScalingAnswer,
        ScalingQuery,
        ScalingRequest,
        "Speedup and efficiency of a training step over chip counts (strong or weak scaling).",
        "The scaling curve of a training workload (body form).",
    ),
)


def _bounded(body: CalculationRequest) -> bool:
    """Whether the calculation's cost is bounded by the engine's closed forms alone: a kernel,
    or a catalog model, on the datasheet's ceilings (tens of microseconds, a few milliseconds
    at the inputs' bounds). An inline config, an operator list (its cost grows with its
    length) and measured ceilings (read from the database) are not."""
    workload = body.workload
    if body.ceilings != "datasheet" or workload.kind == "ops":
        return False
    return not isinstance(workload, TransformerWorkload) or workload.config is None


async def _answer(
    request: Request, catalogs: Catalogs, endpoint: Endpoint, body: CalculationRequest
) -> Response:
    """The endpoint's answer to `body`, and kept for the next identical request unless it
    read measured ceilings: those come from the database, which may change them.

    A bounded calculation runs right here: it takes less time than handing it to a worker
    thread would (docs/performance.md, "Design decisions"). Any other runs off the event loop
    within the time budget (app/http/budget.py)."""
    calculate = partial(endpoint.calculate, catalogs, body)
    calculated = calculate() if _bounded(body) else await within_budget(request, calculate)
    cache = catalogs.answers if body.ceilings == "datasheet" else None
    return await answer(request, cache, calculated)


def _get(endpoint: Endpoint) -> Callable[..., Any]:
    async def get(request: Request, query: Any, catalogs: CatalogsDep) -> Response:
        return await _answer(request, catalogs, endpoint, query.to_body())

    # FastAPI reads the query dependency from here (app/api/query_models.py)
    get.__annotations__["query"] = Annotated[endpoint.query, Depends(query_of(endpoint.query))]
    return get


def _post(endpoint: Endpoint) -> Callable[..., Any]:
    async def post(request: Request, body: Any, catalogs: CatalogsDep) -> Response:
        return await _answer(request, catalogs, endpoint, body)

    post.__annotations__["body"] = endpoint.body  # FastAPI reads the body's model from here
    return post


def _large_bodies(endpoint: Endpoint) -> type[APIRoute]:
    """The POST route of `endpoint`, whose body, when over an ordinary body's cap (an operator
    list: a model's step measured by `roofcheck measure` runs hundreds of operators), is
    validated against the same model in a worker thread, then answered as any other, so that
    the other requests are not held while a model's operators are validated. An ordinary
    body is validated by FastAPI, as every other route's is."""

    class Route(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            ordinary = super().get_route_handler()

            async def handle(request: Request) -> Response:
                size = request.headers.get("content-length", "")
                if not size.isdigit() or int(size) <= request.app.state.max_body_bytes:
                    return await ordinary(request)
                await json_body(request)
                raw = await request.body()
                try:
                    body = await run_in_threadpool(endpoint.body.model_validate_json, raw)
                except ValidationError as error:
                    errors = [{**e, "loc": ("body", *e["loc"])} for e in error.errors()]
                    raise RequestValidationError(errors) from None
                return await _answer(request, request.app.state.catalogs, endpoint, body)

            return handle

    return Route


_TABLE_BODY = {
    "required": True,
    "content": {
        "text/csv": {"schema": {"type": "string", "description": "A header, then a row a line."}},
        "application/json": {"schema": {"type": "array", "items": {"type": "object"}}},
    },
}
_TABLE_ERRORS: dict[int | str, dict[str, str]] = {
    404: _ERRORS[404],
    413: {"description": f"Over ROOFCHECK_MAX_TABLE_BYTES, or more than {MAX_ROWS:,} rows."},
    415: {"description": "The body is sent as neither text/csv nor application/json."},
    422: {"description": "Not CSV with a header nor a JSON list (a bad row is answered in place)."},
    503: _ERRORS[503],
}


def _media(content_type: str) -> str:
    """ "json" or "csv", as the body is sent; else 415."""
    if is_json(content_type.encode("latin-1")):
        return "json"
    if content_type.split(";", maxsplit=1)[0].strip().lower() in ("text/csv", "application/csv"):
        return "csv"
    raise HTTPException(
        status_code=415,
        detail={"message": "send the table as text/csv (with a header) or application/json"},
    )


async def check_table(
    request: Request,
    catalogs: CatalogsDep,
    chip: Annotated[str, Query(min_length=1, max_length=200, description="e.g. h100, a100.")],
    stack: Annotated[
        Software, Query(description="Whose published runs the realistic times assume.")
    ] = STACK_DEFAULT,
    catalog_version: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
) -> Response:
    """Each row's kernel against the roofline, judged as POST /check judges it, ranked by
    the time lost, with a summary; a bad row is answered in place with its error. Never
    stored: a table's measured times change at every run.

    The table is read, judged and its answer rendered in worker threads, within the budget
    and each row's allowance (app/http/tables.py)."""
    media = _media(request.headers.get("content-type", ""))
    body = await request.body()

    def judge(parsed: table.Table) -> bytes:
        answer = table.check_table(catalogs, parsed, chip, stack, catalog_version)
        return answer.model_dump_json().encode()

    try:
        rendered = await judged_table(request, body, media, judge)
    except table.TooManyRows as error:
        return StrictJSONResponse(status_code=413, content={"detail": {"message": str(error)}})
    except table.TableError as error:
        detail = [{"loc": ["body"], "msg": str(error), "type": "not_a_table"}]
        return StrictJSONResponse(status_code=422, content={"detail": detail})
    return Response(rendered, media_type="application/json")


def register(router: APIRouter) -> None:
    """Add every endpoint's GET and POST routes to `router`: the app's own, where FastAPI
    matches them once (an included router's routes are matched through the router first)."""
    for endpoint in ENDPOINTS:
        router.add_api_route(
            endpoint.path,
            _get(endpoint),
            methods=["GET"],
            name=f"{endpoint.name}_get",
            summary=endpoint.summaries[0],
            description=endpoint.get_doc,
            response_model=endpoint.answer,
            responses=_ERRORS,
            openapi_extra=query_parameters(endpoint.query),
            tags=_TAGS,
        )
        router.add_api_route(
            endpoint.path,
            _post(endpoint),
            methods=["POST"],
            name=f"{endpoint.name}_post",
            summary=endpoint.summaries[1],
            description=endpoint.post_doc,
            response_model=endpoint.answer,
            responses=_ERRORS | JSON_BODY_ERRORS,
            dependencies=[JsonBody],
            tags=_TAGS,
            route_class_override=_large_bodies(endpoint),
        )
    router.add_api_route(
        "/check/table",
        check_table,
        methods=["POST"],
        name="check_table",
        summary="Judge a benchmark table, row by row",
        response_model=TableCheck,
        responses=_TABLE_ERRORS,
        openapi_extra={"requestBody": _TABLE_BODY},
        tags=_TAGS,
    )
