"""Bodies of the measurement endpoints: store, list, read, compare, re-judge."""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from app import columns
from app.engine import Phase, Verdict
from app.engine.compare import (
    DEFAULT_CONFIDENCE,
    DEFAULT_THRESHOLD,
    DEFAULT_WINDOW,
    MAX_WINDOW,
)
from app.engine.verdict import gate_choices
from app.schemas.answers import Check, ChipRef, RepeatsOut
from app.schemas.comparison_bodies import Comparison, GateRecord
from app.schemas.comparison_bodies import Finite as _Finite
from app.schemas.requests import CheckRequest

_Label = Annotated[str, Field(min_length=1, max_length=columns.LABEL_LENGTH)]
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")  # how an ISO 8601 date or time begins
# the filters' range: no measurement predates Unix time; a year past 9999 overflows the column
_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
_LATEST = datetime(9999, 12, 30, tzinfo=UTC)
CURSOR_LENGTH = 64  # an encoded position is at most 36 characters
_MICROSECOND = timedelta(microseconds=1)


def encode_cursor(position: columns.Position) -> str:
    """The `next` cursor of a list that stopped at `position`: URL-safe base64, without
    padding, of "<microseconds since 1970 UTC>:<id>"."""
    micros = (position.created_at - _EARLIEST) // _MICROSECOND
    return base64.urlsafe_b64encode(f"{micros}:{position.id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> columns.Position:
    """The position `cursor` encodes; ValueError unless it is one encode_cursor gives, of a
    time between 1970 and 9999 and an id a row may have."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        micros, row_id = (int(part) for part in text.split(":"))
        position = columns.Position(_EARLIEST + micros * _MICROSECOND, row_id)
    except (ValueError, OverflowError):
        position = None
    if (
        position is None
        or not _EARLIEST <= position.created_at <= _LATEST
        or not 1 <= position.id <= columns.MAX_ID
        or encode_cursor(position) != cursor  # one spelling per position
    ):
        raise ValueError("not a cursor of this list: pass the `next` of a previous page as is")
    return position


class MeasurementIn(CheckRequest):
    """A workload, the time it took, and where it ran. Stored with its verdict."""

    label: _Label | None = Field(None, description="Free label, e.g. 'nightly-decode'.")
    git_commit: Annotated[str, Field(min_length=1, max_length=columns.COMMIT_LENGTH)] | None = None
    branch: _Label | None = None
    hostname: Annotated[str, Field(min_length=1, max_length=columns.HOST_LENGTH)] | None = None
    software: dict[Annotated[str, Field(max_length=100)], Annotated[str, Field(max_length=200)]] = (
        Field(default_factory=dict, max_length=64, description="e.g. {'torch': '2.5.1'}")
    )
    notes: Annotated[str, Field(max_length=10_000)] | None = None
    baseline_id: int | None = Field(
        None,
        ge=1,
        le=columns.MAX_ID,
        description="Compare with this stored measurement (same workload).",
    )
    baseline_branch: _Label | None = Field(
        None, description="Compare with the latest earlier measurements on this branch."
    )
    baseline_window: int = Field(
        DEFAULT_WINDOW,
        ge=1,
        le=MAX_WINDOW,
        description="How many of the latest earlier runs (on baseline_branch, if given) the "
        "regression gate compares with: their median, spread and repeats.",
    )
    regression_threshold: float = Field(
        DEFAULT_THRESHOLD,
        gt=0,
        le=100,
        description="Slower than the window's median (or further below its fraction of the "
        "roofline) by more than this fraction flags a regression, if significant.",
    )
    confidence: float = Field(
        DEFAULT_CONFIDENCE,
        gt=0.5,
        lt=1,
        description="The one-sided confidence a slowdown must reach in the Mann-Whitney test "
        "over the repeats: p <= 1 - confidence.",
    )
    confirms: int | None = Field(
        None,
        ge=1,
        le=columns.MAX_ID,
        description="The id of a stored run whose suspected regression this run re-measures: "
        "judged against that run's window, it confirms or clears the alarm.",
    )


GATE_CHOICES = gate_choices()


class Gate(_Finite):
    """A CI gate on a stored measurement: which outcomes fail it, and whether this one did."""

    fail_on: list[str]
    failed: bool
    reasons: list[str]


class MeasurementOut(_Finite):
    """A stored measurement, judged when it was stored."""

    id: int
    created_at: datetime
    catalog_version: str
    chip: ChipRef
    kind: str
    model_id: str | None
    phase: str | None
    workload: dict[str, Any]
    workload_key: str
    measured_values: list[float]
    measured_unit: str
    repeats: RepeatsOut
    measured_time_s: float
    expected_time_s: float
    ratio: float
    efficiency: float
    verdict: Verdict
    advice: list[str]
    label: str | None
    git_commit: str | None
    branch: str | None
    hostname: str | None
    software: dict[str, str]
    notes: str | None
    expectation: dict[str, Any] = Field(
        description="The /check answer it was judged by, without the keys above (chip, "
        "catalog_version, workload, measured_time_s, expected_time_s, ratio, efficiency, "
        "verdict, advice, repeats): each is said once. Stored whole."
    )
    comparison: Comparison
    gate: Gate | None = None

    @field_serializer("expectation")
    def _once(self, expectation: dict[str, Any]) -> dict[str, Any]:
        """The expectation less the keys this model says itself (kept whole for the pages)."""
        return {k: v for k, v in expectation.items() if k not in _SAID}


_SAID = frozenset(MeasurementOut.model_fields)


class MeasurementSummary(_Finite):
    """One row of a measurement list."""

    id: int
    created_at: datetime
    catalog_version: str
    chip_id: str
    kind: str
    model_id: str | None
    phase: str | None
    label: str | None
    branch: str | None
    git_commit: str | None
    measured_time_s: float
    expected_time_s: float
    ratio: float
    verdict: Verdict
    workload_key: str


class MeasurementQuery(BaseModel):
    """Filters and paging of GET /measurements; `chip` and `model` are catalog ids."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    chip: _Label | None = None
    model: _Label | None = None
    phase: Phase | None = None
    label: _Label | None = None
    branch: _Label | None = None
    workload_key: Annotated[str, Field(min_length=64, max_length=64)] | None = None
    since: datetime | None = Field(None, description="ISO 8601, inclusive.")
    until: datetime | None = Field(None, description="ISO 8601, exclusive.")
    limit: int = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0, le=10**9)
    cursor: Annotated[str, Field(min_length=1, max_length=CURSOR_LENGTH)] | None = Field(
        None,
        description="The `next` of the previous page: the rows after it. Unlike `offset`, "
        "which it cannot be combined with, it costs the same at any depth.",
    )

    @field_validator("since", "until", mode="before")
    @classmethod
    def _iso(cls, value: object) -> object:
        """ISO 8601 only: pydantic would read a number (until=0.5) as Unix time."""
        if isinstance(value, str) and not _ISO_DATE.match(value):
            raise ValueError("must be an ISO 8601 date or time, e.g. 2026-11-23T10:00:00Z")
        return value

    @field_validator("since", "until")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        """In UTC (naive timestamps are read as UTC), and in years a database column holds."""
        if value is None:
            return None
        try:
            utc: datetime | None = value.replace(tzinfo=value.tzinfo or UTC).astimezone(UTC)
        except OverflowError:  # 0001-01-01T00:00+00:01 is in year 0 in UTC
            utc = None
        if utc is None or not _EARLIEST <= utc <= _LATEST:
            raise ValueError(f"must be between {_EARLIEST:%Y-%m-%d} and {_LATEST:%Y-%m-%d} (UTC)")
        return utc

    @field_validator("cursor")
    @classmethod
    def _cursor(cls, value: str | None) -> str | None:
        if value is not None:
            decode_cursor(value)
        return value

    @model_validator(mode="after")
    def _one_way_to_page(self) -> Self:
        if self.cursor is not None and "offset" in self.model_fields_set:
            message = "cannot be combined with offset: page on with `next` alone"
            error = InitErrorDetails(
                type=PydanticCustomError("value_error", message), loc=("cursor",), input=self.cursor
            )
            raise ValidationError.from_exception_data(type(self).__name__, [error])
        return self

    @property
    def after(self) -> columns.Position | None:
        """The position `cursor` names (None: from the newest)."""
        return None if self.cursor is None else decode_cursor(self.cursor)


class MeasurementPage(_Finite):
    """A page of measurements, newest first."""

    total: int
    total_kind: columns.TotalKind = Field(
        description="How `total` is known. exact: counted. estimate: the whole table, beyond "
        f"{columns.COUNT_CAP:,} rows (an upper bound, from the span of ids). more_than: a filtered "
        "list of more than `total` rows."
    )
    limit: int
    offset: int
    next: str | None = Field(
        description="Pass as `cursor` for the next (older) page; null on the last page."
    )
    items: list[MeasurementSummary]


class HistoryPoint(_Finite):
    """One run in a workload's history."""

    id: int
    created_at: datetime
    measured_time_s: float
    expected_time_s: float
    ratio: float
    efficiency: float
    verdict: Verdict
    tokens_per_s: float | None
    label: str | None
    branch: str | None
    git_commit: str | None
    catalog_version: str


class Means(_Finite):
    """The history summarised with the right mean for each quantity."""

    time_s: float = Field(description="Arithmetic mean of the times.")
    tokens_per_s: float | None = Field(description="Harmonic mean of the rates.")
    efficiency: float = Field(description="Geometric mean of expected / measured.")
    ratio: float = Field(description="Geometric mean of measured / expected.")


class Overhead(_Finite):
    """time = overhead + roofline / efficiency, fitted over the workload's sizes."""

    overhead_s: float | None  # null, as efficiency, where the fit contradicts the roofline
    efficiency: float | None
    points: int = Field(description="Runs fitted.")
    sizes: int = Field(description="Distinct sizes (roofline times) among them; at least 3.")
    r_squared: float = Field(description="1 - residual / total sum of squares of the times.")
    relative_residual: float = Field(description="RMS residual over the mean time.")
    good_fit: bool = Field(
        description="relative_residual within the bar (docs/formulas.md); otherwise nothing "
        "is concluded and overhead_bound is false."
    )
    overhead_bound: bool
    contradicts_roofline: bool = Field(description="Over 100% efficiency: nothing concluded.")
    explanation: str


class WorkloadComparison(_Finite):
    """Every run of one workload on one chip, compared."""

    workload_key: str
    chip_id: str
    workload: dict[str, Any]
    count: int
    history: list[HistoryPoint]
    best: HistoryPoint
    latest: HistoryPoint
    means: Means
    comparison: Comparison
    overhead: Overhead | None
    gate_record: GateRecord = Field(
        default_factory=GateRecord.empty, description="The alarms the gate raised on its runs."
    )


class Rejudged(_Finite):
    """A stored measurement judged again against another catalog version (not stored)."""

    measurement_id: int
    stored_catalog_version: str
    stored_expected_time_s: float
    stored_verdict: Verdict
    rejudged: Check
