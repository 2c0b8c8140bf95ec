"""The hot path between HTTP and the calculations: a GET query in one pydantic call, an answer
out in another.

FastAPI validates a query-parameter model field by field, inspecting each field's annotation
on every request (~150 µs for the 29 fields of a transformer query), and re-validates a
returned model against the route's response model before turning it into JSON with the
standard library (~60 µs for an optimal-batch answer). Here the query string is validated by
`Model.model_validate` (~2 µs) and the answer serialised by pydantic's own JSON encoder
(~15 µs), once per distinct request: app/api/stored_answers.py serves it again. bench/load.py
measures the difference. The routes still declare their response model, and
`query_parameters` documents the query model, so the OpenAPI schema is the one FastAPI would
write (tests/api/test_answers.py checks that).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any, TypeVar
from urllib.parse import parse_qsl

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from app.api.stored_answers import SCOPE_KEY, key_of
from app.http.request_text import is_json
from app.schemas.queries import TransformerQuery
from app.schemas.requests import CalculationRequest
from app.services.answer_cache import AnswerCache

Model = TypeVar("Model", bound=BaseModel)

_COMPONENTS = "#/components/schemas/{model}"


def parse_query(request: Request, model: type[Model]) -> Model:
    """The request's query string as `model`; a bad one raises the 422 FastAPI would, each
    error located at ("query", field)."""
    return _validated(model, _given(request, model))


def query_body(request: Request, query: type[TransformerQuery]) -> CalculationRequest:
    """The POST body equivalent to the request's query string as `query`: validated straight
    into the body where that is certain to give the same (`query.body_of`; one validation
    rather than three), else the query's `to_body`, with its errors."""
    given = _given(request, query)
    body = query.body_of(given)
    return _validated(query, given).to_body() if body is None else body


def _given(request: Request, model: type[BaseModel]) -> dict[str, Any]:
    """The query string's parameters as FastAPI reads them: a list field takes every value
    of its repeated parameter (?lora_targets=q&lora_targets=v), another field its last."""
    lists, given = _list_fields(model), dict[str, Any]()
    # the pairs Starlette's QueryParams holds (latin-1, blanks kept), without building it
    for name, value in query_pairs(request.scope["query_string"].decode("latin-1")):
        if name in lists:
            given.setdefault(name, []).append(value)
        else:
            given[name] = value
    return given


def query_pairs(query: str) -> list[tuple[str, str]]:
    """`parse_qsl(query, keep_blank_values=True)`: split at each & and the first =, with
    nothing to unquote unless a % or a + is in it (a third of the cost, where there is not)."""
    if "%" in query or "+" in query:
        return parse_qsl(query, True)
    return [(name, value) for name, _, value in (p.partition("=") for p in query.split("&") if p)]


def _validated(model: type[Model], given: dict[str, Any]) -> Model:
    try:
        return model.model_validate(given)
    except ValidationError as error:
        raise RequestValidationError(
            [{**e, "loc": ("query", *e["loc"])} for e in error.errors(include_url=False)]
        ) from None


def posted_body(request: Request, sent: bytes, model: type[Model]) -> Model | None:
    """The POST body `sent` as `model`, read as FastAPI reads a JSON body (json.loads, then the
    model's validation); None for one the route would refuse (not sent as JSON, malformed, a
    field out of range), which the route then answers, with FastAPI's errors."""
    if not is_json(request.headers.get("content-type", "").encode("latin-1")):
        return None
    try:
        return model.model_validate(json.loads(sent))
    except Exception:  # anything the route would refuse: FastAPI words the error
        return None


@cache
def _list_fields(model: type[BaseModel]) -> frozenset[str]:
    """`model`'s fields whose schema is an array (possibly optional)."""
    properties = model.model_json_schema()["properties"]
    return frozenset(
        name
        for name, field in properties.items()
        if "array" in [field.get("type"), *(o.get("type") for o in field.get("anyOf", ()))]
    )


def query_parameters(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` that documents `model`'s fields as query parameters, as FastAPI does
    for `Annotated[model, Query()]` (its enums referenced from the components, which the
    POST bodies that use them put there)."""
    schema = model.model_json_schema(ref_template=_COMPONENTS)
    required = set(schema.get("required", ()))
    parameters = []
    for name, field in schema["properties"].items():
        if "$ref" not in field:  # pydantic leaves the title out of an optional enum's anyOf
            field.setdefault("title", name.replace("_", " ").title())
        parameter: dict[str, Any] = {
            "name": name,
            "in": "query",
            "required": name in required,
            "schema": field,
        }
        if "description" in field:
            parameter["description"] = field["description"]
        parameters.append(parameter)
    return {"parameters": parameters}


async def answer(request: Request, cache: AnswerCache | None, calculated: BaseModel) -> Response:
    """`calculated` as a JSON response, stored in `cache` (unless None: an answer that
    depends on more than the request and the catalogs) for the next identical request
    (which app/api/stored_answers.py serves before routing).

    Answer models refuse NaN and infinity when they are built (allow_inf_nan=False), so the
    JSON is always valid."""
    body = json_bytes(calculated)
    if cache is not None:
        key = request.scope.get(SCOPE_KEY) or key_of(request.scope, await request.body())
        cache.put(key, body)
    return Response(body, media_type="application/json")


def json_bytes(model: BaseModel) -> bytes:
    """`model.model_dump_json().encode()`: pydantic-core's bytes as they are, without their
    round trip through a str (a decode and an encode of every byte) and the Python wrapper's
    checks of its options (together about 50 k instructions for a check's answer)."""
    return type(model).__pydantic_serializer__.to_json(model)
