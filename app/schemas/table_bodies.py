"""POST /check/table: a benchmark table's columns, their aliases, and the answer (docs/api.md,
"Check a benchmark table"). A row is one kernel workload of app/schemas/requests.py, its
measured time and an optional label."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from app.engine import AgainstPublished, Bound, Verdict
from app.engine.units import MICRO, MILLI
from app.schemas.answers import ChipRef, PeakUsed
from app.schemas.kernel_bodies import (
    AttentionWorkload,
    CustomWorkload,
    ElementwiseWorkload,
    RowwiseWorkload,
    SaxpyWorkload,
)
from app.schemas.request_base import Request
from app.schemas.requests import MatmulWorkload, Seconds

MAX_ROWS = 10_000

KINDS: dict[str, type[Request]] = {
    "matmul": MatmulWorkload,
    "elementwise": ElementwiseWorkload,
    "saxpy": SaxpyWorkload,
    "softmax": RowwiseWorkload,
    "layernorm": RowwiseWorkload,
    "rmsnorm": RowwiseWorkload,
    "attention": AttentionWorkload,
    "custom": CustomWorkload,
}
WORKLOAD_FIELDS = frozenset(name for model in KINDS.values() for name in model.model_fields)

# The measured time: one of these columns, in its unit (seconds per unit), or `tflops`
TIMES = {"measured_time_s": 1.0, "measured_ms": MILLI, "measured_us": MICRO}
TFLOPS = "tflops"  # the achieved rate: time = the row's FLOPs / (tflops x 10^12)
LABEL, KIND = "label", "kind"
COLUMNS = WORKLOAD_FIELDS | TIMES.keys() | {TFLOPS, LABEL}

# Common names in published benchmark tables, each for one column of the above; names are
# matched without regard to case, spaces or hyphens (M is m, "Time (ms)" is not a column)
ALIASES = {
    "s": "measured_time_s",
    "seconds": "measured_time_s",
    "time_s": "measured_time_s",
    "ms": "measured_ms",
    "time_ms": "measured_ms",
    "latency_ms": "measured_ms",
    "us": "measured_us",
    "time_us": "measured_us",
    "latency_us": "measured_us",
    "tflop/s": TFLOPS,
    "tflops_per_s": TFLOPS,
    "seqlen": "q_len",
    "seq_len": "q_len",
    "kv_seqlen": "kv_len",
    "nheads": "heads",
    "num_heads": "heads",
    "nheads_kv": "kv_heads",
    "num_kv_heads": "kv_heads",
    "headdim": "head_dim",
    "bs": "batch",
    "batch_size": "batch",
    "hidden": "cols",
    "hidden_size": "cols",
    "numel": "n",
    "name": LABEL,
    "op": KIND,
}

SECONDS = TypeAdapter(Seconds)
TFLOPS_VALUE = TypeAdapter(Annotated[float, Field(gt=0, le=1e9)])


class _Answer(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)


class RowError(_Answer):
    """Why a row was not judged: the column as the table names it (or `row`), and the
    reason."""

    column: str
    message: str


class TableRow(_Answer):
    """One row: its kernel against the roofline, judged as POST /check judges, or its
    error."""

    row: int = Field(description="1-based, in the table's order, the header not counted.")
    label: str | None
    kind: str | None
    error: RowError | None = None
    rank: int | None = Field(None, description="1 for the row that lost the most time.")
    measured_time_s: float | None = Field(None, description="The mean of the repeats.")
    repeats: int | None = None
    flops: float | None = None
    bytes: float | None = None
    arithmetic_intensity: float | None = None
    expected_time_s: float | None = Field(None, description="The ideal roofline time.")
    realistic_time_s: float | None = None
    realistic_range_s: list[float] | None = None
    ratio: float | None = Field(None, description="measured / expected.")
    efficiency: float | None = Field(None, description="The fraction of the roofline reached.")
    achieved_flops_per_s: float | None = None
    achieved_bytes_per_s: float | None = None
    peak: PeakUsed | None = Field(None, description="The roof the row's FLOPs run under.")
    bound: Bound | None = None
    verdict: Verdict | None = None
    against_published: AgainstPublished | None = None
    time_lost_s: float | None = Field(None, description="measured - expected, at least 0.")


class WorstRow(_Answer):
    row: int
    label: str | None
    verdict: Verdict
    efficiency: float
    time_lost_s: float


class TableSummary(_Answer):
    rows: int
    judged: int
    errors: int
    verdicts: dict[str, int] = Field(description="Judged rows per verdict.")
    geomean_efficiency: float | None = Field(
        description="The geometric mean of the judged rows' fractions of the roofline."
    )
    measured_time_s: float = Field(description="The judged rows' measured times, summed.")
    time_lost_s: float = Field(description="Their time lost, summed.")
    worst: list[WorstRow] = Field(description="Up to 5 rows that lost the most time.")


class TableCheck(_Answer):
    """A benchmark table judged row by row (docs/api.md, "Check a benchmark table")."""

    catalog_version: str
    chip: ChipRef
    stack: str
    columns: dict[str, str] = Field(description="Each column of the table: what it was read as.")
    ignored_columns: list[str] = Field(description="Columns that are none of the known ones.")
    summary: TableSummary
    rows: list[TableRow] = Field(description="In the table's order, bad rows in place.")
