"""What the result page shows, computed through the same service functions as the JSON API."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pydantic import ValidationError

from app.engine import Chip, EngineError
from app.schemas.answers import Check, ExpectedTime
from app.schemas.planning_answers import MemoryFitAnswer, OptimalBatchAnswer, ScalingAnswer
from app.schemas.requests import (
    CalculationRequest,
    CheckRequest,
    LatencyBounds,
    OptimalBatchRequest,
    ScalingRequest,
    TransformerWorkload,
)
from app.services import expectations, planning
from app.services.catalogs import Catalogs
from app.web.charts import data_of, roofline_svg
from app.web.forms import FED, FIELDS, SCALING_FIELDS, covers, errors_of, scaling_of
from app.web.svg import for_page
from app.web.trends import scaling_svg, sweep_svg


@dataclass(frozen=True, slots=True)
class Result:
    """Everything the result page shows."""

    answer: ExpectedTime
    check: Check | None
    memory: MemoryFitAnswer | None
    batch: OptimalBatchAnswer | None
    roofline: str
    sweep: str | None
    scaling: ScalingAnswer | None = None
    scaling_chart: str | None = None
    scaling_errors: dict[str, str] = field(default_factory=dict)  # form field -> message
    scaling_note: str = ""  # why the curve over the form's own chip counts is not drawn
    covers: str = ""  # what one measured time covers, in words


def chip_of(catalogs: Catalogs, answer: ExpectedTime) -> Chip:
    """The engine chip an answer was computed on."""
    return catalogs.chips(answer.catalog_version).chips[answer.chip.id].chip


def roofline_for(catalogs: Catalogs, request: CalculationRequest) -> str:
    """The roofline chart of a request (with its measured point when it is a check)."""
    measured = None
    if isinstance(request, CheckRequest):
        check = expectations.check(catalogs, request)
        answer: ExpectedTime = check
        measured = check.measured_time_s
    else:
        answer = expectations.expected_time(catalogs, request)
    return roofline_svg(data_of(answer, chip_of(catalogs, answer), measured))


def scaling_for(
    catalogs: Catalogs, request: CalculationRequest, counts: list[int], serial_fraction: float
) -> ScalingAnswer:
    """The scaling curve of a training request over `counts` chips."""
    return planning.scaling(
        catalogs,
        ScalingRequest(
            chip=request.chip,
            catalog_version=request.catalog_version,
            workload=request.workload,
            chip_counts=counts,
            serial_fraction=serial_fraction,
        ),
    )


def _scaling_errors(errors: dict[str, str]) -> dict[str, str]:
    """Why the scaling curve was not drawn, beside its own fields: a workload field that fits
    the answer but not a chip count (a batch that dp does not divide) is named there."""
    notes: dict[str, str] = {}
    for name, message in errors.items():
        if name in SCALING_FIELDS:
            notes[name] = message
        else:
            notes["chip_counts"] = f"not drawn, {name} at these counts: {message}"
    return notes


def batch_request(request: CalculationRequest, bounds: LatencyBounds) -> OptimalBatchRequest:
    """The optimal batch's request: the calculation's fields and the latency bound."""
    fields = {name: getattr(request, name) for name in CalculationRequest.model_fields}
    return OptimalBatchRequest.model_validate(fields | bounds.model_dump(exclude_none=True))


def compute(
    catalogs: Catalogs,
    request: CalculationRequest,
    scaling: Mapping[str, str] | None = None,
    bounds: LatencyBounds | None = None,
) -> Result:
    """Expected time (and the check when a time was measured), memory fit and the batch sweep
    for transformers (within the latency bound, if one is given), the scaling curve for
    training (over the chip counts and serial fraction), and the charts. The page always
    shows a step's breakdown by operation and the best changes of the work (what_if)."""
    request = request.model_copy(update={"breakdown": True, "what_if": True})
    check = expectations.check(catalogs, request) if isinstance(request, CheckRequest) else None
    answer = check if check is not None else expectations.expected_time(catalogs, request)
    memory = batch = None
    workload = request.workload
    if isinstance(workload, TransformerWorkload):
        memory = planning.memory_fit(catalogs, request)
        try:
            batch = planning.optimal_batch(
                catalogs, batch_request(request, bounds or LatencyBounds())
            )
        except EngineError:  # the sweep is extra; the answer stands without it
            batch = None
    curve, scaling_errors = None, {}
    if answer.training is not None and scaling is not None:
        try:  # the curve is extra: the answer stands without it, its fields say what is wrong
            curve = scaling_for(catalogs, request, *scaling_of(scaling))
        except (EngineError, ValidationError) as exc:
            scaling_errors = _scaling_errors(errors_of(exc, "transformer"))
    measured = check.measured_time_s if check is not None else None
    data = data_of(answer, chip_of(catalogs, answer), measured)
    return Result(
        answer=answer,
        check=check,
        memory=memory,
        batch=batch,
        roofline=for_page(partial(roofline_svg, data)),
        sweep=for_page(partial(sweep_svg, batch)) if batch is not None else None,
        scaling=curve,
        scaling_chart=for_page(partial(scaling_svg, curve)) if curve is not None else None,
        scaling_errors=scaling_errors,
        covers=covers(workload.kind, str(getattr(workload, "phase", ""))),
    )


def workload_params(workload: dict[str, Any], chip_id: str) -> dict[str, str]:
    """Form values that describe a stored workload, to check it again from the form (a
    training step's input pipeline by the input pipeline kind's fields)."""
    kind = str(workload.get("kind", ""))
    params = {"chip": chip_id, "kind": kind, **_form_texts(workload, kind)}
    pipeline = workload.get("input_pipeline")
    if kind == "transformer" and isinstance(pipeline, dict):
        params |= {FED: "true", **_form_texts(pipeline, "input_pipeline")}
    return params


def _form_texts(fields: dict[str, Any], kind: str) -> dict[str, str]:
    """The form's text of each of `kind`'s fields among `fields`."""
    params: dict[str, str] = {}
    for schema_name, form_name in FIELDS.get(kind, {}).items():
        value = fields.get(schema_name)
        if isinstance(value, dict):  # a pasted config
            params[form_name] = json.dumps(value)
        elif isinstance(value, bool):
            params[form_name] = str(value).lower()
        elif isinstance(value, list):
            params[form_name] = ",".join(str(v) for v in value)
        elif value is not None:
            params[form_name] = str(value)
    return params
