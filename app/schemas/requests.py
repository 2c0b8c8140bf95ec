"""Request bodies of the calculations: workloads, chips, measured times (SI units: seconds,
bytes, FLOPs). The GET query forms are in app/schemas/queries.py."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BeforeValidator, Field, model_validator

from app.engine import Dtype, Phase, Software, TransformerSpec
from app.engine.scaling import MAX_COUNTS, ScalingMode
from app.engine.training import (
    ALL_LINEAR,
    MAX_CHIPS,
    DataParallelAlgorithm,
    Lora,
    LoraTarget,
    Optimizer,
)
from app.engine.units import seconds_from_ms
from app.schemas.answer_options import BREAKDOWN, WHAT_IF
from app.schemas.copy_bodies import CopyWorkload
from app.schemas.input_pipeline_bodies import InputPipelineWorkload, PipelineField
from app.schemas.kernel_bodies import (
    AttentionWorkload,
    CustomWorkload,
    ElementwiseWorkload,
    RowwiseWorkload,
    SaxpyWorkload,
)
from app.schemas.matmul_body import MatmulWorkload as MatmulWorkload  # noqa: PLC0414 (re-export)
from app.schemas.ops_bodies import OpsWorkload
from app.schemas.request_base import Request
from app.schemas.sparsity import Sparsity, sparsity_field

NAME = Field(min_length=1, max_length=200)


# The workloads' defaults are the engine's, declared once there (tests/api/test_defaults.py).
_SPEC = TransformerSpec()
_TRAINING = _SPEC.training
_PARALLEL = _TRAINING.parallel
_LORA = Lora()


class TrainingFields(Request):
    """How a training step runs (phase=training only; docs/formulas.md, "Training")."""

    optimizer: Optimizer = Field(
        _TRAINING.optimizer,
        description="adamw/adam (8 B of state per parameter), sgd_momentum (4), adam_8bit (2), "
        "adafactor (factored, ~0); plus 4 B of fp32 master weights in 16-bit training.",
    )
    zero: int = Field(_PARALLEL.zero, ge=0, le=3, description="ZeRO stage (3 = FSDP full shard).")
    dp: int = Field(_PARALLEL.dp, ge=1, le=MAX_CHIPS, description="Data-parallel replicas.")
    pp: int = Field(
        _PARALLEL.pp, ge=1, le=MAX_CHIPS, description="Pipeline stages (at most the layers)."
    )
    ep: int = Field(_PARALLEL.ep, ge=1, le=MAX_CHIPS, description="Expert-parallel degree (MoE).")
    cp: int = Field(
        _PARALLEL.cp,
        ge=1,
        le=MAX_CHIPS,
        description="Context-parallel degree: each sequence split cp ways (ring attention).",
    )
    micro_batch: int | None = Field(
        _PARALLEL.micro_batch,
        ge=1,
        le=10**9,
        description="Sequences per micro-batch; default each replica's batch.",
    )
    lora_rank: int | None = Field(
        None, ge=1, le=65536, description="Fine-tune with LoRA adapters of this rank."
    )
    lora_targets: list[LoraTarget] = Field(
        default_factory=lambda: list(_LORA.targets),
        min_length=1,
        max_length=len(ALL_LINEAR),
        description="Linear layers LoRA adapts (q, k, v, o, gate, up, down).",
    )
    qlora: bool = Field(
        _LORA.quantized_base, description="With lora_rank: the frozen base in 4-bit NF4."
    )
    mfu: float | None = Field(
        _TRAINING.mfu,
        gt=0,
        le=1,
        description="Assumed model FLOPs utilisation for the realistic time.",
    )
    train_tokens: float | None = Field(
        _TRAINING.tokens, gt=0, le=1e16, description="Tokens to train on, for the time to train."
    )
    chips_per_node: int = Field(
        _PARALLEL.chips_per_node, ge=1, le=MAX_CHIPS, description="Chips on one scale-up link."
    )
    network_bandwidth: float = Field(
        _PARALLEL.network_bandwidth,
        gt=0,
        le=1e15,
        description="Scale-out bytes/s per chip and direction (default: 400 Gb/s InfiniBand).",
    )
    overlap: bool = Field(
        _PARALLEL.overlap, description="Overlap the gradient reduction with the backward."
    )
    dp_algorithm: DataParallelAlgorithm = Field(
        _PARALLEL.dp_algorithm, description="ring all-reduce or a parameter server."
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

    phase: Phase = Field(_SPEC.phase, description="decode, prefill, generate or training.")
    batch: int = Field(_SPEC.batch, ge=1, le=10**9, description="Sequences processed together.")
    seq_len: int = Field(
        _SPEC.seq_len,
        ge=1,
        le=10**8,
        description="Context length (decode), prompt length (prefill, generate) or sequence "
        "length (training), in tokens.",
    )
    gen_len: int = Field(_SPEC.gen_len, ge=1, le=10**8, description="New tokens (generate only).")
    dtype: Dtype | None = Field(
        None,
        description=f"Compute and activation dtype; default {_SPEC.precision.compute}, or fp16 "
        "on a chip without bf16 (T4, V100).",
    )
    weight_dtype: Dtype | None = Field(
        None,
        description="Dtype of stored linear weights (e.g. int4 for w4a16); default dtype, or in "
        "inference the model's checkpoint format where narrower (gpt-oss: mxfp4 experts).",
    )
    kv_dtype: Dtype | None = Field(None, description="KV-cache dtype (e.g. fp8); default dtype.")
    sparsity: Sparsity | None = sparsity_field("the linear layers' weights (not in training)")
    tp: int = Field(_SPEC.tp, ge=1, le=4096, description="Chips, tensor parallel.")
    reserve_fraction: float = Field(
        _SPEC.reserve_fraction,
        ge=0,
        lt=1,
        description="Share of each chip's memory held back for the runtime (vLLM's default "
        "gpu_memory_utilization=0.9 leaves 0.1).",
    )
    flash_attention: bool = Field(
        _SPEC.flash_attention,
        description="A fused (flash) attention kernel: the scores never reach memory. false: "
        "they are written and read in fp32 (llama.cpp before FlashAttention, PyTorch's eager "
        "attention), and training stores them for the backward.",
    )
    recompute: bool = Field(_SPEC.recompute, description="Training: full activation recomputation.")


class TransformerWorkload(TransformerFields):
    """A transformer model running one phase. Give `model` (a catalog name) or `config`."""

    kind: Literal["transformer"] = "transformer"
    model: Annotated[str, NAME] | None = Field(
        None, description="Catalog id or alias, e.g. llama-8b (see /models)."
    )
    config: dict[str, Any] | None = Field(
        None, description="A Hugging Face config.json, inline, for a model not in the catalog."
    )
    input_pipeline: PipelineField = None

    @model_validator(mode="after")
    def _one_model(self) -> Self:
        if (self.model is None) == (self.config is None):
            raise ValueError("give exactly one of model (a catalog name) or config (inline)")
        return self


KernelWorkload = (
    MatmulWorkload
    | ElementwiseWorkload
    | SaxpyWorkload
    | RowwiseWorkload
    | AttentionWorkload
    | CustomWorkload
)
Workload = Annotated[  # without `kind`: a transformer (its schema's default), no missing tag
    TransformerWorkload | KernelWorkload | OpsWorkload | CopyWorkload | InputPipelineWorkload,
    Field(discriminator="kind"),
    BeforeValidator(lambda w: {"kind": "transformer", **w} if isinstance(w, dict) else w),
]


ChipName = Annotated[str, NAME, Field(description="Catalog id or alias, e.g. a100 (see /chips).")]
CatalogVersionName = Annotated[
    str | None, NAME, Field(description="Chip catalog version; default the current one.")
]


StackName = Annotated[
    Software,
    Field(
        description="The software stack that runs the work: the realistic time and its range "
        "come from published runs on it (typical: every published run of the kind of work)."
    ),
]
STACK_DEFAULT = _SPEC.software  # the engine calls the stack its software


CeilingsName = Annotated[
    Literal["datasheet", "empirical"],
    Field(
        description="Whose sustained fractions the realistic time starts from: the catalog's "
        "(datasheet: best-case kernels measured by their sources) or the newest profile "
        "`roofcheck probe` stored for the chip (empirical)."
    ),
]


class CalculationRequest(Request):
    """A workload on a chip."""

    chip: ChipName
    catalog_version: CatalogVersionName = None
    stack: StackName = STACK_DEFAULT
    ceilings: CeilingsName = "datasheet"
    breakdown: bool = BREAKDOWN
    what_if: bool = WHAT_IF
    workload: Workload


# A measured time is physical: from a nanosecond (below any timer's resolution and any kernel
# launch, about 2 µs) to 10^7 s (116 days, beyond any one run worth judging). Closer to zero or
# to infinity, ratios and means of times leave the floats (1e-310 s is a denormal).
Seconds = Annotated[float, Field(ge=1e-9, le=1e7)]
Millis = Annotated[float, Field(ge=1e-6, le=1e10)]  # the same range in milliseconds
_REPEATS = 10_000


class Measured(Request):
    """A measured time in seconds or in milliseconds (exactly one): a value or repeats."""

    measured_time_s: (
        Seconds | Annotated[list[Seconds], Field(min_length=1, max_length=_REPEATS)] | None
    ) = Field(
        None, description="Measured seconds, or a list of repeats (their arithmetic mean is used)."
    )
    measured_ms: (
        Millis | Annotated[list[Millis], Field(min_length=1, max_length=_REPEATS)] | None
    ) = Field(None, description="Measured milliseconds, or a list of repeats.")
    cpu_time_s: Seconds | None = Field(
        None, description="The host's process CPU time of one run (docs/api.md#verdicts)."
    )
    cpu_ms: Millis | None = Field(None, description="The same in milliseconds.")

    @model_validator(mode="after")
    def _one_time(self) -> Self:
        if (self.measured_time_s is None) == (self.measured_ms is None):
            raise ValueError("give exactly one of measured_time_s or measured_ms")
        if self.cpu_time_s is not None and self.cpu_ms is not None:
            raise ValueError("give at most one of cpu_time_s or cpu_ms")
        return self

    @property
    def cpu_seconds(self) -> float | None:
        """The CPU time in seconds, None where not given."""
        return self.cpu_time_s if self.cpu_ms is None else seconds_from_ms(self.cpu_ms)

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
        if self.measured_unit == "s":
            return self.measured_values
        return [seconds_from_ms(value) for value in self.measured_values]


class CheckRequest(CalculationRequest, Measured):
    """A workload on a chip and the time it took. Give measured_time_s or measured_ms."""


class LatencyBounds(Request):
    """Serving latency bounds on the optimal batch: the realistic time per output token (a
    decode step) or to the first token (a prefill)."""

    max_tpot_ms: Millis | None = Field(
        None, description="Decode: the longest time per output token, in ms, the batch may take."
    )
    max_ttft_ms: Millis | None = Field(
        None, description="Prefill: the longest time to first token, in ms, the batch may take."
    )


class OptimalBatchRequest(LatencyBounds, CalculationRequest):
    """A transformer workload, and optionally a latency bound its batch must meet."""


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
