"""Response bodies of the calculations (SI units: seconds, bytes, FLOPs, FLOP/s, bytes/s)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    computed_field,
)

from app.engine import (
    AgainstPublished,
    Backend,
    Bound,
    Dtype,
    Floor,
    Software,
    Unit,
    Verdict,
)
from app.engine.compare import Repeats
from app.engine.fusion import AgainstFusion
from app.schemas import display
from app.schemas.echo import EchoedWorkload
from app.schemas.input_pipeline_bodies import InputPipelineOut


class _Out(BaseModel):
    # built with keyword arguments, so validated: a NaN or an infinity from a calculation
    # fails here (a 500 that is logged), never reaching the JSON (app/api/stored_answers.py)
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
    context_parallel_s: float = Field(description="Ring attention's K/V passes (cp > 1).")
    data_parallel_s: float
    data_parallel_exposed_s: float = Field(description="What the overlap leaves exposed.")
    data_parallel_bytes: float = Field(description="Bytes each chip sends per step.")
    data_parallel_over_network: bool


class TrainingOut(_Out):
    """A training step over all chips, and the run it belongs to. The step's time is the
    answer's expected_time_s (ideal) and realistic_time_s (at the sustained fractions, or at
    the given MFU)."""

    chips: int
    layout: dict[str, int] = Field(description="tp, dp, pp, ep, cp")
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


class OpOut(_Out):
    """One operator of an `ops` workload, as its own kernel."""

    name: str
    flops: float
    bytes: float
    expected_time_s: float = Field(description="Its ideal roofline time alone (0 for a view).")
    bound: Bound | None = Field(description="compute or memory; null for a view (no kernel).")


class BreakdownRow(_Out):
    """One operation of a transformer step, over its `count` occurrences, on one chip."""

    name: str = Field(description="e.g. qkv_projection, attention, mlp_down, tp_allreduce.")
    count: float = Field(description="Occurrences in the step (layers, passes, or 1).")
    flops: float
    bytes: float
    time_s: float = Field(
        description="Its own roofline at the step's peak, max(FLOPs / peak, bytes / bandwidth), "
        "or a collective's or the pipeline bubble's seconds."
    )
    share: float = Field(description="time_s over the sum of every row's time_s.")
    bound: Bound


class WhatIfOut(_Out):
    """The same work with one change (docs/formulas.md#what-if)."""

    change: str = Field(description="The change, in words: e.g. weights in int8.")
    key: str = Field(description="A stable id of the change: e.g. weights_int8, kv_fp8, tp_x2.")
    expected_time_s: float = Field(description="Ideal roofline time of the changed work.")
    realistic_time_s: float = Field(description="Realistic time of the changed work.")
    speedup: float = Field(
        description="How much faster the same amount of work runs with the change: the "
        "answer's realistic_time_s x work_scale / this item's realistic_time_s (> 1: faster). "
        "Per token for a changed batch (throughput), per step otherwise (tp_x2: the step on "
        "twice the chips)."
    )
    work_scale: float = Field(
        1.0,
        description="The changed work over the answer's: its tokens over the answer's for "
        "optimal_batch, 1 for every other change.",
    )
    fits: bool | None = Field(
        None, description="Transformers: whether the changed work fits in memory (kernels: null)."
    )


class _Answer(_Out):
    catalog_version: str
    chip: ChipRef
    workload: EchoedWorkload
    model: ModelRef | None = None
    explanation: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    assumptions: list[str] = Field(
        default_factory=list, description="Every assumption that changed these numbers."
    )


class _Displayed(_Answer):
    """An answer with `formatted`: its numbers for people (app/schemas/display.py)."""

    shown: ClassVar[display.Shown] = ()

    @computed_field(description=display.DESCRIPTION)  # type: ignore[prop-decorator]
    @property
    def formatted(self) -> dict[str, str]:
        """Computed as the answer is serialised (once per distinct request)."""
        return display.formatted(self, self.shown)


class ExpectedTime(_Displayed):
    """The roofline time of a workload on a chip."""

    shown = display.EXPECTED_TIME

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
    realistic_time_s: float = Field(
        description="What published runs of this kind of work on this stack reach: the "
        "sustained-kernel time times their median ratio, plus fixed costs."
    )
    # the fields below have defaults only so that answers stored before they existed still
    # read back (a stored measurement's expectation); every new answer fills them
    realistic_range_s: list[float] | None = Field(
        None,
        description="[low, high]: the 10th-90th percentile of published runs (cross-validated).",
    )
    sustained_time_s: float | None = Field(
        None, description="At the chip's best-case kernel fractions alone (sustained_*_fraction)."
    )
    overhead_time_s: float = Field(
        0.0,
        description="Fixed costs in the realistic time: kernel gaps, graph launches, "
        "collective latencies, eager host dispatch.",
    )
    kernels: int = Field(1, description="Kernel launches the workload takes on this stack.")
    stack: Software = Field(Software.TYPICAL, description="The stack the realistic time is for.")
    published_stack: Software = Field(
        Software.TYPICAL,
        description="The stack whose published runs set the realistic ratio: the stack's "
        "own where runs were published, else typical (tuned software as published).",
    )
    published_backend: Backend | None = Field(
        None,
        description="The chip's backend (its vendor's: nvidia, amd, apple, intel, google) "
        "whose runs of the stack set the realistic ratio, where the stack has its own entry "
        "on it (established: 5 runs by 2 sources); null where the stack's runs on every "
        "backend (or typical software's) set it.",
    )
    published_runs: int = Field(0, description="Published runs behind the realistic ratio.")
    ceilings: Literal["datasheet", "empirical"] = Field(
        "datasheet", description="Whose sustained fractions the realistic time starts from."
    )
    sustained_compute_fraction: float
    sustained_memory_fraction: float
    bound: Bound = Field(description="compute, memory, communication, overhead or input.")
    cache_roof_time_s: float | None = Field(
        None,
        description="The roofline time with every byte read at the bandwidth of the chip's "
        "last-level cache (the cache roof, which a run timed back to back can reach): null "
        "where the bytes do not fit in that cache or its bandwidth is not catalogued.",
    )
    memory_required_bytes: float | None = None
    memory_available_bytes: float | None = None
    fits: bool | None = None
    tokens_per_s: float | None = None
    realistic_tokens_per_s: float | None = None
    time_to_first_token_s: float | None = None
    time_per_output_token_s: float | None = None
    training: TrainingOut | None = None
    input_pipeline: InputPipelineOut | None = Field(
        None, description="The input pipeline's time per step, stage by stage, where one was given."
    )
    ops: list[OpOut] | None = Field(None, description="ops workloads: each op alone.")
    unfused_time_s: float | None = Field(
        None, description="ops: each op its own kernel, ideal times plus launch costs."
    )
    fused_time_s: float | None = Field(
        None, description="ops: the whole as one kernel (its external tensors), one launch."
    )
    launch_overhead_s: float | None = Field(
        None, description="ops: the fixed cost of launching the kernels with nothing to do."
    )
    breakdown: list[BreakdownRow] | None = Field(
        None, description="With breakdown=true: the step by operation (prefill, decode, training)."
    )
    what_if: list[WhatIfOut] | None = Field(
        None,
        description="With what_if=true: the same work with each change that applies to it, "
        "best realistic speed-up first.",
    )


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

    shown = display.CHECK

    measured_time_s: float = Field(description="The mean of the repeats, in seconds.")
    repeats: RepeatsOut
    ratio: float = Field(description="measured / expected")
    efficiency: float = Field(description="expected / measured: the fraction of the roofline.")
    verdict: Verdict
    judged_against: Floor | None = Field(
        None,
        description="What the verdict judged the run against: roofline (the ideal time) or "
        "fixed_costs (the least time the fixed costs of overhead-bound work allow).",
    )
    floor_time_s: float | None = Field(
        None, description="That time in seconds: expected_time_s, or the fixed costs' floor."
    )
    floor_ratio: float | None = Field(None, description="measured / floor_time_s")
    realistic_ratio: float | None = Field(None, description="measured / realistic")
    achieved_flops_per_s: float = Field(description="The work's FLOPs over the measured time.")
    achieved_bytes_per_s: float = Field(description="Its bytes over the measured time.")
    flops_share_of_peak: float = Field(
        description="achieved_flops_per_s / the peak the work runs at (peak_flops)."
    )
    bytes_share_of_bandwidth: float = Field(description="achieved_bytes_per_s / memory_bandwidth.")
    against_published: AgainstPublished | None = Field(
        None, description="Where the run sits against realistic_range_s."
    )
    advice: list[str]
    against_fusion: AgainstFusion | None = Field(
        None,
        description="ops: faster_than_fused, between_fused_and_unfused or slower_than_unfused.",
    )
    cpu_time_s: float | None = Field(
        None, description="The host's process CPU time of the run given, in seconds."
    )
    cpu_share: float | None = Field(None, description="cpu_time_s / measured_time_s")
    host_bound: bool | None = Field(
        None,
        description="cpu_share >= 0.9 in a run slower than its floor: the host was busy "
        "throughout (null without a CPU time).",
    )
