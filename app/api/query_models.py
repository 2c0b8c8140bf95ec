"""A GET's query string as one pydantic model, read by a FastAPI dependency.

FastAPI's own `Annotated[Model, Query()]` inspects each field's annotation on every request,
which for a transformer query of thirty-odd fields costs several times the calculation it
feeds. `query_of(Model)` is a dependency that validates the query string in one call of the
model instead, its errors located at ("query", field) as FastAPI's are, and
`query_parameters(Model)` documents the same fields in the OpenAPI schema, as FastAPI would.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

Model = TypeVar("Model", bound=BaseModel)

_COMPONENTS = "#/components/schemas/{model}"


def query_of(model: type[Model]) -> Callable[[Request], Awaitable[Model]]:
    """A dependency: the request's query string as `model` (a 422 naming each bad field). A
    list field takes every value of its repeated parameter (?lora_targets=q&lora_targets=v),
    another field its last, as FastAPI reads them."""
    lists = _list_fields(model)

    async def query(request: Request) -> Model:
        given: dict[str, Any] = {}
        for name, value in request.query_params.multi_items():
            if name in lists:
                given.setdefault(name, []).append(value)
            else:
                given[name] = value
        try:
            return model.model_validate(given)
        except ValidationError as error:
            raise RequestValidationError(
                [{**e, "loc": ("query", *e["loc"])} for e in error.errors(include_url=False)]
            ) from None

    return query


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
