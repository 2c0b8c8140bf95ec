"""Request and response bodies of the calculation API (SI units: seconds, bytes, FLOPs)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.engine import Bound, Dtype, LimitedBy, Phase, Unit, Verdict
from app.engine.compare import Repeats
from app.engine.scaling import MAX_COUNTS, ScalingMode
from app.engine.training import (
    ALL_LINEAR,
    DEFAULT_CHIPS_PER_NODE,
    DEFAULT_NETWORK_BANDWIDTH,
    MAX_CHIPS,
    DataParallelAlgorithm,
    LoraTarget,
    Optimizer,
)

_BIG = 10**15  # element counts: far beyond any device, keeps products finite
_NAME = Field(min_length=1, max_length=200)


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, protected_namespaces=())


class TrainingFields(_Request):
    """How a training step runs (phase=training only; docs/formulas.md, "Training")."""

    optimizer: Optimizer = Field(
        Optimizer.ADAMW,
        description="adamw/adam (8 B of state per parameter), sgd_momentum (4), adam_8bit (2), "
        "adafactor (factored, ~0); plus 4 B of fp32 master weights in 16-bit training.",
    )
    zero: int = Field(0, ge=0, le=3, description="ZeRO stage (3 = FSDP full shard).")
    dp: int = Field(1, ge=1, le=MAX_CHIPS, description="Data-parallel replicas.")
    pp: int = Field(1, ge=1, le=MAX_CHIPS, description="Pipeline stages (divide the layers).")
    ep: int = Field(1, ge=1, le=MAX_CHIPS, description="Expert-parallel degree (MoE).")
    micro_batch: int | None = Field(
        None, ge=1, le=10**9, description="Sequences per micro-batch; default each replica's batch."
    )
    lora_rank: int | None = Field(
        None, ge=1, le=65536, description="Fine-tune with LoRA adapters of this rank."
    )
    lora_targets: list[LoraTarget] = Field(
        default_factory=lambda: list(ALL_LINEAR),
        min_length=1,
        max_length=len(ALL_LINEAR),
        description="Linear layers LoRA adapts (q, k, v, o, gate, up, down).",
    )
    qlora: bool = Field(False, description="With lora_rank: the frozen base in 4-bit NF4.")
    mfu: float | None = Field(
        None, gt=0, le=1, description="Assumed model FLOPs utilisation for the realistic time."
    )
    train_tokens: float | None = Field(
        None, gt=0, le=1e16, description="Tokens to train on, for the time to train."
    )
    chips_per_node: int = Field(
        DEFAULT_CHIPS_PER_NODE, ge=1, le=MAX_CHIPS, description="Chips on one scale-up link."
    )
    network_bandwidth: float = Field(
        DEFAULT_NETWORK_BANDWIDTH,
        gt=0,
        le=1e15,
        description="Scale-out bytes/s per chip and direction (default: 400 Gb/s InfiniBand).",
    )
    overlap: bool = Field(True, description="Overlap the gradient reduction with the backward.")
    dp_algorithm: DataParallelAlgorithm = Field(
        DataParallelAlgorithm.RING, description="ring all-reduce or a parameter server."
    )


def without_ignored_training(fields: dict[str, Any], phase: str | None) -> dict[str, Any]:
    """A transformer workload's `fields` without its training fields unless it is a training
    step: elsewhere they are ignored (with a warning), so they neither identify a workload
    nor describe it."""
    if phase == "training":
        return fields
    return {k: v for k, v in fields.items() if k not in TrainingFields.model_fields}


class TransformerFields(TrainingFields):
    """What a transformer workload runs, in the POST body's workload and the GET query alike."""

    phase: Phase = Field(Phase.DECODE, description="decode, prefill, generate or training.")
    batch: int = Field(1, ge=1, le=10**9, description="Sequences processed together.")
    seq_len: int = Field(
        2048,
        ge=1,
        le=10**8,
        description="Context length (decode), prompt length (prefill, generate) or sequence "
        "length (training), in tokens.",
    )
    gen_len: int = Field(256, ge=1, le=10**8, description="New tokens (generate only).")
    dtype: Dtype = Field(Dtype.BF16, description="Compute and activation dtype.")
    weight_dtype: Dtype | None = Field(
        None, description="Dtype of stored linear weights (e.g. int4 for w4a16); default dtype."
    )
    kv_dtype: Dtype | None = Field(None, description="KV-cache dtype (e.g. fp8); default dtype.")
    tp: int = Field(1, ge=1, le=4096, description="Chips, tensor parallel.")
    reserve_fraction: float = Field(
        0.1,
        ge=0,
        lt=1,
        description="Share of each chip's memory held back for the runtime (vLLM's default "
        "gpu_memory_utilization=0.9 leaves 0.1).",
    )
    flash_attention: bool = Field(True, description="Training: scores are not stored.")
    recompute: bool = Field(False, description="Training: full activation recomputation.")


class TransformerWorkload(TransformerFields):
    """A transformer model running one phase. Give `model` (a catalog name) or `config`."""

    kind: Literal["transformer"] = "transformer"
    model: Annotated[str, _NAME] | None = Field(
        None, description="Catalog id or alias, e.g. llama-8b (see /models)."
    )
    config: dict[str, Any] | None = Field(
        None, description="A Hugging Face config.json, inline, for a model not in the catalog."
    )

    @model_validator(mode="after")
    def _one_model(self) -> Self:
        if (self.model is None) == (self.config is None):
            raise ValueError("give exactly one of model (a catalog name) or config (inline)")
        return self


class MatmulWorkload(_Request):
    """(m x k) @ (k x n)."""

    kind: Literal["matmul"]
    m: int = Field(ge=1, le=10**9)
    n: int = Field(ge=1, le=10**9)
    k: int = Field(ge=1, le=10**9)
    dtype: Dtype = Field(Dtype.FP32, description="Operand dtype; fp32 is PyTorch's default.")
    allow_tf32: bool = Field(False, description="Let fp32 matmuls use the TF32 matrix peak.")


_OpCount = Annotated[int, Field(ge=1, le=10**6)]
_OpNames = Annotated[
    list[Annotated[str, Field(max_length=32)]], Field(min_length=1, max_length=10**4)
]


class ElementwiseWorkload(_Request):
    """A chain of pointwise ops over n elements, fused into one kernel or one kernel per op."""

    kind: Literal["elementwise"]
    n: int = Field(ge=1, le=_BIG, description="Elements.")
    ops: (
        Annotated[int, Field(ge=1, le=10**6)]
        | Annotated[
            list[Annotated[str, Field(max_length=32)]], Field(min_length=1, max_length=10**4)
        ]
    ) = Field(1, description="Number of ops in the chain, or their names (e.g. ['cos', 'cos']).")
    flops_per_element: float | None = Field(
        None, ge=0, le=10**6, description="FLOPs per element of the whole chain; default: ops."
    )
    fused: bool = True
    inputs: int = Field(1, ge=1, le=64, description="Input tensors read (1 for x.cos()).")
    dtype: Dtype = Dtype.FP32


class SaxpyWorkload(_Request):
    """y = a x + y over n elements."""

    kind: Literal["saxpy"]
    n: int = Field(ge=1, le=_BIG)
    dtype: Dtype = Dtype.FP32


class RowwiseWorkload(_Request):
    """A fused softmax, layernorm or rmsnorm over the last dimension of (rows x cols)."""

    kind: Literal["softmax", "layernorm", "rmsnorm"]
    rows: int = Field(ge=1, le=_BIG)
    cols: int = Field(ge=1, le=10**9)
    dtype: Dtype = Dtype.FP32


class AttentionWorkload(_Request):
    """One attention layer: softmax(Q K^T) V."""

    kind: Literal["attention"]
    batch: int = Field(1, ge=1, le=10**9)
    heads: int = Field(ge=1, le=10**5)
    kv_heads: int | None = Field(None, ge=1, le=10**5, description="Default: heads (MHA).")
    q_len: int = Field(ge=1, le=10**8)
    kv_len: int | None = Field(None, ge=1, le=10**8, description="Default: q_len.")
    head_dim: int = Field(ge=1, le=10**5)
    causal: bool = False
    flash: bool = Field(True, description="Fused: scores never reach memory.")
    dtype: Dtype = Dtype.BF16


class CustomWorkload(_Request):
    """Work given directly as FLOPs and bytes moved."""

    kind: Literal["custom"]
    flops: float = Field(ge=0, le=1e30)
    bytes: float = Field(gt=0, le=1e30)
    dtype: Dtype = Dtype.FP32
    unit: Unit = Field(Unit.VECTOR, description="matrix (tensor cores) or vector ALUs.")


KernelWorkload = (
    MatmulWorkload
    | ElementwiseWorkload
    | SaxpyWorkload
    | RowwiseWorkload
    | AttentionWorkload
    | CustomWorkload
)
Workload = Annotated[TransformerWorkload | KernelWorkload, Field(discriminator="kind")]


_Chip = Annotated[str, _NAME, Field(description="Catalog id or alias, e.g. a100 (see /chips).")]
_CatalogVersion = Annotated[
    str | None, _NAME, Field(description="Chip catalog version; default the current one.")
]


class CalculationRequest(_Request):
    """A workload on a chip."""

    chip: _Chip
    catalog_version: _CatalogVersion = None
    workload: Workload


_Seconds = Annotated[float, Field(gt=0, le=1e9)]
_Millis = Annotated[float, Field(gt=0, le=1e12)]
_REPEATS = 10_000


class _Measured(_Request):
    """A measured time in seconds or in milliseconds (exactly one): a value or repeats."""

    measured_time_s: (
        _Seconds | Annotated[list[_Seconds], Field(min_length=1, max_length=_REPEATS)] | None
    ) = Field(
        None, description="Measured seconds, or a list of repeats (their arithmetic mean is used)."
    )
    measured_ms: (
        _Millis | Annotated[list[_Millis], Field(min_length=1, max_length=_REPEATS)] | None
    ) = Field(None, description="Measured milliseconds, or a list of repeats.")

    @model_validator(mode="after")
    def _one_time(self) -> Self:
        if (self.measured_time_s is None) == (self.measured_ms is None):
            raise ValueError("give exactly one of measured_time_s or measured_ms")
        return self

    @property
    def measured_unit(self) -> Literal["s", "ms"]:
        """The unit the time was given in."""
        return "s" if self.measured_time_s is not None else "ms"

    @property
    def measured_values(self) -> list[float]:
        """The values as given (in `measured_unit`)."""
        given = self.measured_time_s if self.measured_time_s is not None else self.measured_ms
        if given is None:  # excluded by _one_time
            return []
        return given if isinstance(given, list) else [given]

    @property
    def measured_seconds(self) -> list[float]:
        """The values in seconds."""
        scale = 1.0 if self.measured_unit == "s" else 1e-3
        return [value * scale for value in self.measured_values]


class CheckRequest(CalculationRequest, _Measured):
    """A workload on a chip and the time it took. Give measured_time_s or measured_ms."""


_Body = TypeVar("_Body", bound="CalculationRequest")


class TransformerQuery(TransformerFields):
    """GET query parameters for transformer workloads (the POST body's fields, flat)."""

    chip: _Chip
    model: Annotated[str, _NAME] = Field(description="Catalog id or alias, e.g. llama-8b.")
    catalog_version: _CatalogVersion = None

    def to_request(self) -> CalculationRequest:
        """The equivalent POST body."""
        return self._body(CalculationRequest)

    def _body(self, body: type[_Body], **fields: Any) -> _Body:
        """`body` with this query's chip, catalog version and workload, and `fields`."""
        # the same fields, already validated by the same declarations (TransformerFields) and
        # with the model named, so the workload needs no second validation
        workload = TransformerWorkload.model_construct(**self.model_dump(include=_WORKLOAD_FIELDS))
        return body(
            chip=self.chip, catalog_version=self.catalog_version, workload=workload, **fields
        )


# a query's own fields that make up its workload (the rest say where to look it up)
_WORKLOAD_FIELDS = set(TransformerFields.model_fields) | {"model"}


class CheckQuery(TransformerQuery, _Measured):
    """GET query parameters of /check: a transformer workload and the time it took."""

    measured_time_s: _Seconds | None = Field(None, description="Measured seconds.")
    measured_ms: _Millis | None = Field(None, description="Measured milliseconds.")

    def to_check(self) -> CheckRequest:
        """The equivalent POST body."""
        return self._body(
            CheckRequest, measured_time_s=self.measured_time_s, measured_ms=self.measured_ms
        )


# --- responses -----------------------------------------------------------------------------


class _Out(BaseModel):
    # built with keyword arguments, so validated: a NaN or an infinity from a calculation
    # fails here (a 500 that is logged), never reaching the JSON (app/api/wire.py)
    model_config = ConfigDict(allow_inf_nan=False)


class ChipRef(_Out):
    """The chip a name resolved to."""

    id: str
    name: str


class ModelRef(_Out):
    """The model a name resolved to (or 'custom' for an inline config)."""

    id: str
    name: str
    params_total: int
    params_active: int


class PeakUsed(_Out):
    """Which peak the compute term used."""

    flops_per_s: float
    dtype: Dtype
    unit: Unit


class MemoryBreakdownOut(_Out):
    """Bytes per chip by what holds them."""

    weights: float
    kv_cache: float
    activations: float
    gradients: float
    optimizer: float
    reserve: float


class CommunicationOut(_Out):
    """Seconds per step of each collective on one chip."""

    tensor_parallel_s: float
    pipeline_s: float
    expert_s: float
    data_parallel_s: float
    data_parallel_exposed_s: float = Field(description="What the overlap leaves exposed.")
    data_parallel_bytes: float = Field(description="Bytes each chip sends per step.")
    data_parallel_over_network: bool


class TrainingOut(_Out):
    """A training step over all chips, and the run it belongs to. The step's time is the
    answer's expected_time_s (ideal) and realistic_time_s (at the sustained fractions, or at
    the given MFU)."""

    chips: int
    layout: dict[str, int] = Field(description="tp, dp, pp, ep")
    micro_batch: float
    micro_batches: int = Field(description="Per replica and step.")
    bubble_fraction: float = Field(description="(p-1)/(m+p-1) of the step is pipeline idle.")
    tokens_per_step: float
    trained_params: float
    model_flops: float = Field(description="Per step, all chips: 6 N T + attention.")
    mfu: float = Field(description="Model FLOPs utilisation at the ideal step time.")
    realistic_mfu: float
    time_to_train_s: float | None
    realistic_time_to_train_s: float | None
    realistic_time_to_train_days: float | None
    communication: CommunicationOut


class _Answer(_Out):
    catalog_version: str
    chip: ChipRef
    workload: TransformerWorkload | KernelWorkload
    model: ModelRef | None = None
    explanation: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class ExpectedTime(_Answer):
    """The roofline time of a workload on a chip."""

    flops: float
    bytes: float
    arithmetic_intensity: float = Field(description="FLOPs per byte.")
    ridge_intensity: float = Field(description="peak / bandwidth, FLOPs per byte.")
    peak_flops: float
    peak: PeakUsed
    memory_bandwidth: float = Field(description="bytes/s")
    compute_time_s: float
    memory_time_s: float
    communication_time_s: float
    expected_time_s: float = Field(description="Ideal roofline time: the physical floor.")
    realistic_time_s: float = Field(description="With the chip's measured sustained fractions.")
    sustained_compute_fraction: float
    sustained_memory_fraction: float
    bound: Bound
    memory_required_bytes: float | None = None
    memory_available_bytes: float | None = None
    fits: bool | None = None
    tokens_per_s: float | None = None
    realistic_tokens_per_s: float | None = None
    time_to_first_token_s: float | None = None
    time_per_output_token_s: float | None = None
    training: TrainingOut | None = None


class RepeatsOut(_Out):
    """Repeated measurements: the arithmetic mean of times is the one judged."""

    count: int
    mean_s: float
    min_s: float
    max_s: float
    stdev_s: float

    @classmethod
    def of(cls, repeats: Repeats) -> RepeatsOut:
        """The engine's summary, in seconds."""
        return cls(
            count=repeats.count,
            mean_s=repeats.mean,
            min_s=repeats.minimum,
            max_s=repeats.maximum,
            stdev_s=repeats.stdev,
        )


class Check(ExpectedTime):
    """A measured time against the roofline."""

    measured_time_s: float = Field(description="The mean of the repeats, in seconds.")
    repeats: RepeatsOut
    ratio: float = Field(description="measured / expected")
    efficiency: float = Field(description="expected / measured: the fraction of the roofline.")
    verdict: Verdict
    advice: list[str]


class MemoryFitAnswer(_Answer):
    """Memory needed per chip and what fits."""

    required_bytes: float
    available_bytes: float
    fits: bool
    breakdown: MemoryBreakdownOut
    max_batch: int
    min_chips: int | None
    min_chips_layout: dict[str, int] | None = Field(
        None, description="The parallel degrees (tp, and in training pp, dp, ep) of min_chips."
    )
    max_trainable_params: float | None = Field(
        None,
        description="Training: the largest model whose weights and training state fit at this "
        "layout, before activations.",
    )


class SweepRow(_Out):
    """One batch size of the optimal-batch sweep."""

    batch: int
    compute_time_s: float
    memory_time_s: float
    expected_time_s: float
    memory_required_bytes: float
    fits: bool
    tokens_per_s: float
    bound: Bound


class OptimalBatchAnswer(_Answer):
    """The optimal batch and the sweep it came from."""

    optimal_batch: int | None
    limited_by: LimitedBy
    ridge_batch: int | None
    max_batch: int
    throughput_asymptote_tokens_per_s: float
    near_asymptote_batch: int
    asymptotic_intensity: float = Field(description="FLOP/B as the batch grows without bound.")
    ridge_intensity: float = Field(description="FLOP/B where compute and memory roofs meet.")
    sweep: list[SweepRow]


class ScalingRequest(CalculationRequest):
    """A training workload and the chip counts to scale it over."""

    chip_counts: list[Annotated[int, Field(ge=1, le=MAX_CHIPS)]] = Field(
        min_length=1,
        max_length=MAX_COUNTS,
        description="Ascending chip counts, e.g. [8, 16, 32, 64].",
    )
    mode: ScalingMode = Field(ScalingMode.STRONG, description="strong: fixed global batch.")
    serial_fraction: float = Field(
        0.0, ge=0, le=1, description="Serial fraction f for Amdahl's (strong) or Gustafson's law."
    )


_COUNTS = r"^\s*\d{1,7}(\s*,\s*\d{1,7})*\s*$"


def _counts(value: str) -> list[int]:
    return [int(n) for n in value.split(",")]


class ScalingQuery(TransformerQuery):
    """GET query parameters of /scaling (phase defaults to training)."""

    phase: Phase = Phase.TRAINING
    chip_counts: str = Field(
        "8,16,32,64,128",
        max_length=1000,
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

    def to_scaling(self) -> ScalingRequest:
        """The equivalent POST body."""
        return self._body(
            ScalingRequest,
            chip_counts=_counts(self.chip_counts),
            mode=self.mode,
            serial_fraction=self.serial_fraction,
        )


class ScalingRow(_Out):
    """One chip count of the scaling curve."""

    chips: int
    dp: int
    batch: int
    step_time_s: float
    tokens_per_s: float
    speedup: float
    efficiency: float
    law_speedup: float = Field(description="Amdahl (strong) or Gustafson (weak) at f.")
    communication_time_s: float
    fits: bool


class ScalingAnswer(_Answer):
    """Speedup and efficiency of a training step over chip counts."""

    mode: ScalingMode
    serial_fraction: float
    amdahl_limit: float | None = Field(description="1/f: no chip count goes beyond it.")
    points: list[ScalingRow]
