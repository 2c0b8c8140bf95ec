"""Response bodies of the planning calculations: memory fit, optimal batch, scaling (SI units:
seconds, bytes, FLOPs, FLOP/s, bytes/s)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, with_config
from typing_extensions import TypedDict

from app.engine import Bound, LimitedBy
from app.engine.scaling import ScalingMode
from app.schemas import display
from app.schemas.answers import MemoryBreakdownOut, _Answer, _Displayed, _Out


class MemoryFitAnswer(_Displayed):
    """Memory needed per chip and what fits."""

    shown = display.MEMORY_FIT

    required_bytes: float
    available_bytes: float
    fits: bool
    breakdown: MemoryBreakdownOut
    max_batch: int
    min_chips: int | None
    min_chips_layout: dict[str, int] | None = Field(
        None, description="The parallel degrees (tp, and in training pp, dp, ep, cp) of min_chips."
    )
    max_trainable_params: float | None = Field(
        None,
        description="Training: the largest model whose weights and training state fit at this "
        "layout, before activations.",
    )
    max_trainable_params_with_activations: float | None = Field(
        None,
        description="Training: the same in the memory left by this workload's activations at "
        "its batch, sequence and layout (held fixed, not rescaled to the other model's width).",
    )


# a typed dict, not a model: a row of the sweep is plain data, built as a dict by the service
@with_config(_Out.model_config)
class SweepRow(TypedDict):
    """One batch size of the optimal-batch sweep."""

    batch: int
    compute_time_s: float
    memory_time_s: float
    expected_time_s: float
    realistic_time_s: float
    memory_required_bytes: float
    fits: bool
    tokens_per_s: float
    bound: Bound


class OptimalBatchAnswer(_Displayed):
    """The optimal batch and the sweep it came from."""

    shown = display.OPTIMAL_BATCH

    optimal_batch: int | None
    limited_by: LimitedBy
    ridge_batch: int | None
    max_batch: int
    max_step_time_s: float | None = Field(
        description="The latency bound given (max_tpot_ms or max_ttft_ms), in seconds."
    )
    latency_batch: int | None = Field(
        description="With a latency bound: the largest batch whose realistic step time meets "
        "it (0: not even batch 1)."
    )
    throughput_asymptote_tokens_per_s: float
    near_asymptote_batch: int
    asymptotic_intensity: float = Field(description="FLOP/B as the batch grows without bound.")
    ridge_intensity: float = Field(description="FLOP/B where compute and memory roofs meet.")
    sweep: list[SweepRow]


# a typed dict, like SweepRow
@with_config(_Out.model_config)
class ScalingRow(TypedDict):
    """One chip count of the scaling curve."""

    chips: int
    dp: int
    batch: int
    step_time_s: float
    tokens_per_s: float
    speedup: float
    efficiency: float
    law_speedup: Annotated[
        float,
        Field(
            description="Amdahl (strong) or Gustafson (weak) at f, over base_chips (r = chips / "
            "base_chips; f the serial share of the base run)."
        ),
    ]
    law_speedup_vs_one: Annotated[
        float,
        Field(description="The same law over one chip (r = chips): Amdahl 1 / (f + (1-f)/chips)."),
    ]
    communication_time_s: float
    fits: bool


class ScalingAnswer(_Answer):
    """Speedup and efficiency of a training step over chip counts."""

    mode: ScalingMode
    serial_fraction: float
    base_chips: int = Field(
        description="The first chip count: speedup, efficiency and law_speedup are over it."
    )
    amdahl_limit: float | None = Field(description="1/f: no chip count goes beyond it.")
    points: list[ScalingRow]
