"""GET query parameters of the calculation endpoints: the POST bodies' fields, flat."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import ConfigDict, Field, field_validator
from pydantic.config import JsonDict

from app.engine import Phase
from app.engine.scaling import MAX_COUNTS, ScalingMode
from app.engine.training import MAX_CHIPS
from app.schemas.answer_options import BREAKDOWN, WHAT_IF
from app.schemas.echo import ONLY_IN
from app.schemas.planning_requests import (
    MAX_TPOT,
    OPTIONS,
    MaxContextRequest,
    MemoryFitRequest,
)
from app.schemas.requests import (
    NAME,
    STACK_DEFAULT,
    CalculationRequest,
    CatalogVersionName,
    CeilingsName,
    CheckRequest,
    ChipName,
    LatencyBounds,
    Measured,
    Millis,
    OptimalBatchRequest,
    ScalingRequest,
    Seconds,
    StackName,
    TrainingFields,
    TransformerFields,
    TransformerWorkload,
)

_Body = TypeVar("_Body", bound="CalculationRequest")

# The order /docs lists a query's parameters in (its schema's properties; the models keep
# their declared order): what must be given, the measured time, the workload's shape, the
# endpoint's own, where to look it up, and the training-only fields last.
_MEASURED = frozenset(Measured.model_fields)
_SHAPE = frozenset(TransformerFields.model_fields) - frozenset(TrainingFields.model_fields)
_LOOKUP = frozenset(("catalog_version", "stack", "ceilings", "breakdown"))


def _place(name: str, required: frozenset[str]) -> int:
    if name in required:
        return 0
    if name in _MEASURED:
        return 1
    if name in TrainingFields.model_fields or ONLY_IN.get(name) is Phase.TRAINING:
        return 5
    if name in _SHAPE:
        return 2
    return 4 if name in _LOOKUP else 3


def reading_order(schema: JsonDict) -> None:
    """`json_schema_extra` of a query model: its properties in the order a person gives
    them (a stable sort: each group in its declared order)."""
    properties, given = schema["properties"], schema.get("required", [])
    assert isinstance(properties, dict) and isinstance(given, list)
    required = frozenset(map(str, given))
    schema["properties"] = {
        name: properties[name] for name in sorted(properties, key=lambda n: _place(n, required))
    }


class TransformerQuery(TransformerFields):
    """GET query parameters for transformer workloads (the POST body's fields, flat)."""

    model_config = ConfigDict(json_schema_extra=reading_order)

    chip: ChipName
    model: Annotated[str, NAME] = Field(description="Catalog id or alias, e.g. llama-8b.")
    catalog_version: CatalogVersionName = None
    stack: StackName = STACK_DEFAULT
    ceilings: CeilingsName = "datasheet"
    breakdown: bool = BREAKDOWN
    what_if: bool = WHAT_IF

    def to_body(self) -> CalculationRequest:
        """The equivalent POST body."""
        return self._body(CalculationRequest)

    def _body(
        self, body: type[_Body], *, if_given: frozenset[str] = frozenset(), **extra: Any
    ) -> _Body:
        """`body` with this query's chip, catalog version and workload, and `extra` fields;
        the workload's fields in `if_given` only where the query gives them."""
        # the same fields, validated by the same declarations (TransformerFields, the request's
        # own)
        fields = self.__dict__
        left_out = if_given - self.model_fields_set
        workload = TransformerWorkload.model_validate(
            {name: fields[name] for name in _WORKLOAD_FIELDS - left_out}
        )
        return body.model_validate(
            dict(
                chip=self.chip,
                catalog_version=self.catalog_version,
                stack=self.stack,
                ceilings=self.ceilings,
                breakdown=self.breakdown,
                what_if=self.what_if,
                workload=workload,
                **extra,
            )
        )


# a query's own fields that make up its workload (the rest say where to look it up)
_WORKLOAD_FIELDS = set(TransformerFields.model_fields) | {"model"}


class CheckQuery(TransformerQuery, Measured):
    """GET query parameters of /check: a transformer workload and the time it took."""

    measured_time_s: Seconds | None = Field(None, description="Measured seconds.")
    measured_ms: Millis | None = Field(None, description="Measured milliseconds.")

    def to_body(self) -> CheckRequest:
        """The equivalent POST body."""
        return self._body(
            CheckRequest, measured_time_s=self.measured_time_s, measured_ms=self.measured_ms
        )


class OptimalBatchQuery(LatencyBounds, TransformerQuery):
    """GET query parameters of /optimal-batch: a transformer workload and a latency bound."""

    def to_body(self) -> OptimalBatchRequest:
        """The equivalent POST body."""
        return self._body(
            OptimalBatchRequest, max_tpot_ms=self.max_tpot_ms, max_ttft_ms=self.max_ttft_ms
        )


class MemoryFitQuery(TransformerQuery):
    """GET query parameters of /memory-fit: a transformer workload, and its dtype options."""

    options: bool = OPTIONS

    def to_body(self) -> MemoryFitRequest:
        """The equivalent POST body."""
        return self._body(MemoryFitRequest, options=self.options)


class MaxContextQuery(TransformerQuery):
    """GET query parameters of /max-context: a decode step (its seq_len is the answer) and
    a bound on its time."""

    max_tpot_ms: Millis | None = MAX_TPOT

    def to_body(self) -> MaxContextRequest:
        """The equivalent POST body: seq_len only where given (which the answer refuses)."""
        return self._body(
            MaxContextRequest, if_given=frozenset({"seq_len"}), max_tpot_ms=self.max_tpot_ms
        )


_COUNTS = r"^\s*\d{1,7}(\s*,\s*\d{1,7})*\s*$"
_MAX_COUNTS_TEXT = 1000


def _counts(value: str) -> list[int]:
    return [int(n) for n in value.split(",")]


class ScalingQuery(TransformerQuery):
    """GET query parameters of /scaling (phase defaults to training)."""

    phase: Phase = Phase.TRAINING
    chip_counts: str = Field(
        "8,16,32,64,128",
        max_length=_MAX_COUNTS_TEXT,
        pattern=_COUNTS,
        description="Comma-separated ascending chip counts.",
    )
    mode: ScalingMode = ScalingMode.STRONG
    serial_fraction: float = Field(0.0, ge=0, le=1)

    @field_validator("chip_counts")
    @classmethod
    def _counts_in_range(cls, value: str) -> str:
        counts = _counts(value)
        if len(counts) > MAX_COUNTS or not all(1 <= n <= MAX_CHIPS for n in counts):
            raise ValueError(f"give 1 to {MAX_COUNTS} counts, each between 1 and {MAX_CHIPS}")
        return value

    def to_body(self) -> ScalingRequest:
        """The equivalent POST body."""
        return self._body(
            ScalingRequest,
            chip_counts=_counts(self.chip_counts),
            mode=self.mode,
            serial_fraction=self.serial_fraction,
        )
