"""The check form: the raw values a user typed, turned into API requests, and errors mapped
back to the form field that caused them.

The form's names for a transformer are the query parameters of GET /expected-time, plus
`measured_ms`; kernels add `kind` and their sizes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from app.catalog.names import UnknownName
from app.engine import EngineError, InvalidInput
from app.schemas.measurement_bodies import MeasurementIn
from app.schemas.queries import ScalingQuery
from app.schemas.requests import (
    CalculationRequest,
    CheckRequest,
    CustomWorkload,
    ElementwiseWorkload,
    ScalingRequest,
    TransformerFields,
)
from app.services.catalogs import Catalogs

KINDS = ("transformer", "matmul", "elementwise", "custom")
# phase=training only; the form shows the ones engineers change most
TRAINING_FIELDS = (
    *("optimizer", "zero", "dp", "pp", "ep", "cp", "micro_batch"),
    *("lora_rank", "qlora", "recompute", "mfu", "train_tokens"),
)
SCALING_FIELDS = ("chip_counts", "serial_fraction")
# schema field -> form field, per workload kind
FIELDS: dict[str, dict[str, str]] = {
    "transformer": {
        name: name
        for name in (
            *("model", "phase", "batch", "seq_len", "gen_len"),
            *("dtype", "weight_dtype", "kv_dtype", "tp"),
            *TRAINING_FIELDS,
        )
    },
    "matmul": {"m": "m", "n": "n", "k": "k", "dtype": "dtype"},
    "elementwise": {
        "n": "elements",
        "ops": "ops",
        "inputs": "inputs",
        "fused": "fused",
        "dtype": "dtype",
    },
    "custom": {"flops": "flops", "bytes": "bytes", "unit": "unit", "dtype": "dtype"},
}
STORE_FIELDS = ("label", "branch", "git_commit", "notes")


def _text(value: object) -> str:
    """A default as the form shows it: '' for none, true/false, 0.5, 2048, bf16."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _declared(model: type[BaseModel], names: Iterable[str]) -> dict[str, str]:
    fields = model.model_fields
    return {name: _text(fields[name].get_default(call_default_factory=True)) for name in names}


# The order is the form's (links to the charts list the values in it). Kernel sizes and the
# first chip and model shown are the form's own; everything the API also takes is read from
# its declaration (tests/api/test_defaults.py pins both).
DEFAULTS: dict[str, str] = {
    "kind": "transformer",
    "chip": "a100",
    "model": "llama-3.1-8b",
    **_declared(
        TransformerFields,
        [name for name in FIELDS["transformer"] if name not in ("model", "dtype")],
    ),
    "dtype": "",  # each kind's own default: bf16 for models and attention, fp32 for kernels
    **_declared(CalculationRequest, ("stack", "ceilings")),
    **_declared(ScalingQuery, ("chip_counts",)),
    **_declared(ScalingRequest, ("serial_fraction",)),
    **{"m": "4096", "n": "4096", "k": "4096", "elements": "100000000"},
    **_declared(ElementwiseWorkload, ("ops", "inputs", "fused")),
    **{"flops": "1e12", "bytes": "1e9"},
    **_declared(CustomWorkload, ("unit",)),
    "measured_ms": "",
    **dict.fromkeys(STORE_FIELDS, ""),
}
GENERAL = "form"  # errors that belong to no single field


def form_values(given: Mapping[str, str], catalogs: Catalogs | None = None) -> dict[str, str]:
    """The defaults overlaid with what the user sent (trimmed); unknown names are dropped."""
    values = dict(DEFAULTS)
    if catalogs is not None:
        values["chip"] = _default_chip(catalogs)
        values["model"] = _default_model(catalogs)
    for name in DEFAULTS:
        if name in given:
            values[name] = str(given[name]).strip()
    return values


def _default_chip(catalogs: Catalogs) -> str:
    chips = catalogs.chips()
    try:
        return chips.resolve("a100").entry.id
    except UnknownName:
        return next(iter(chips.chips), "")


def _default_model(catalogs: Catalogs) -> str:
    models = catalogs.models.models
    return DEFAULTS["model"] if DEFAULTS["model"] in models else next(iter(models), "")


_SCIENTIFIC = re.compile(r"^\d+(\.\d*)?[eE]\+?\d+$")


def _number(text: str) -> str:
    """'1e8' -> '100000000', so that sizes can be typed in scientific notation."""
    if _SCIENTIFIC.match(text):
        value = float(text)
        if value.is_integer() and value < 1e18:
            return str(int(value))
    return text


def _ops(text: str) -> int | list[str] | str:
    if text.isdigit():
        return int(text)
    names = [part.strip() for part in text.split(",") if part.strip()]
    return names or text


def _workload(values: Mapping[str, str]) -> dict[str, Any]:
    kind = values.get("kind", "transformer")
    fields = FIELDS.get(kind, {})
    workload: dict[str, Any] = {"kind": kind}
    for schema_name, form_name in fields.items():
        text = values.get(form_name, "")
        if text:
            workload[schema_name] = _ops(text) if schema_name == "ops" else _number(text)
    return workload


def scaling_of(values: Mapping[str, str]) -> tuple[list[int], float]:
    """The chip counts and serial fraction of the scaling chart (their ranges are checked
    where the curve is computed); InvalidInput names the one that does not parse."""
    try:
        counts = [int(n) for n in values.get("chip_counts", "").split(",")]
    except ValueError:
        raise InvalidInput(
            "chip_counts", "give comma-separated whole numbers, e.g. 8,16,32"
        ) from None
    try:
        return counts, float(values.get("serial_fraction", "") or 0)
    except ValueError:
        raise InvalidInput("serial_fraction", "give a number between 0 and 1") from None


def measured_ms(values: Mapping[str, str]) -> list[str] | None:
    """The measured milliseconds as typed: one value or comma-separated repeats; None if empty."""
    parts = [p.strip() for p in values.get("measured_ms", "").split(",") if p.strip()]
    return parts or None


def _body(values: Mapping[str, str]) -> dict[str, Any]:
    if values.get("kind") not in KINDS:
        raise UnknownName("workload kind", values.get("kind", ""), list(KINDS))
    body: dict[str, Any] = {"chip": values.get("chip", ""), "workload": _workload(values)}
    for name in ("stack", "ceilings"):
        if values.get(name):
            body[name] = values[name]
    measured = measured_ms(values)
    if measured is not None:
        body["measured_ms"] = measured[0] if len(measured) == 1 else measured
    return body


def calculation(values: Mapping[str, str]) -> CalculationRequest:
    """The request the form describes: a CheckRequest when a measured time is given.

    Raises ValidationError (bad values) or UnknownName (unknown kind)."""
    body = _body(values)
    if "measured_ms" in body:
        return CheckRequest.model_validate(body)
    return CalculationRequest.model_validate(body)


def measurement(values: Mapping[str, str]) -> MeasurementIn:
    """The measurement the store form describes (a measured time is required)."""
    body = _body(values)
    body.setdefault("measured_ms", None)
    body.update({name: values[name] for name in STORE_FIELDS if values.get(name)})
    return MeasurementIn.model_validate(body)


def _form_name(kind: str, schema_name: str) -> str:
    if schema_name in ("measured", "measured_time_s", "measured_ms"):
        return "measured_ms"
    fields = FIELDS.get(kind, {})
    if schema_name in fields:
        return fields[schema_name]
    return schema_name if schema_name == "chip" or schema_name in SCALING_FIELDS else GENERAL


def _validation_errors(exc: ValidationError, kind: str) -> dict[str, str]:
    errors: dict[str, str] = {}
    for error in exc.errors():
        loc = [str(part) for part in error["loc"]]
        message = str(error["msg"]).removeprefix("Value error, ")
        if loc[:1] == ["workload"]:
            name = _form_name(kind, loc[2]) if len(loc) > 2 else "model"
        elif loc and loc[0] in DEFAULTS:
            name = loc[0]
        elif "measured" in message:
            name = "measured_ms"
        else:
            name = GENERAL
        errors.setdefault(name, message)
    return errors


def errors_of(exc: Exception, kind: str) -> dict[str, str]:
    """Form field -> message for a validation, name or engine error."""
    if isinstance(exc, ValidationError):
        return _validation_errors(exc, kind)
    if isinstance(exc, UnknownName):
        hint = f"; did you mean {', '.join(exc.suggestions)}?" if exc.suggestions else ""
        field = exc.kind if exc.kind in ("chip", "model") else GENERAL
        if exc.kind == "workload kind":
            field = "kind"
        return {field: f"unknown {exc.kind} {exc.name!r}{hint}"}
    if isinstance(exc, EngineError):
        return {_form_name(kind, getattr(exc, "field", "")): str(getattr(exc, "message", exc))}
    raise exc
