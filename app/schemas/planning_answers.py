"""Response bodies of the planning calculations: memory fit, longest context, optimal batch,
scaling (SI units: seconds, bytes, FLOPs, FLOP/s, bytes/s)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, with_config
from typing_extensions import TypedDict

from app import formatting as fmt
from app.engine import Bound, Dtype, LimitedBy
from app.engine.context import ContextLimit
from app.engine.scaling import ScalingMode
from app.schemas import display
from app.schemas.answers import MemoryBreakdownOut, _Answer, _Displayed, _Out


# a typed dict, not a model: an option is plain data, built as a dict by the service
@with_config(_Out.model_config)
class DtypeOption(TypedDict):
    """The workload with one weight and KV-cache dtype pair."""

    weight_dtype: Dtype
    kv_dtype: Dtype
    changes: Annotated[
        list[str],
        Field(description="The fields changed from the workload as given (none: as given)."),
    ]
    required_bytes: float
    fits: bool
    expected_time_s: float
    realistic_time_s: Annotated[
        float,
        Field(description="Of the workload as given (a decode step: the time per output token)."),
    ]


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
    options: list[DtypeOption] | None = Field(
        None,
        description="With options=true: each weight and KV-cache dtype pair the chip can use, "
        "those that fit first, the smallest change first; null without.",
    )


def _tokens_of_context(count: int) -> str:
    return f"{count:,} tokens"


class MaxContextAnswer(_Displayed):
    """The longest context of a decode step, what sets it, and the step there."""

    shown = (
        ("max_context", "max_context", _tokens_of_context),
        ("max_step_time", "max_step_time_s", fmt.seconds),
        ("expected_time", "expected_time_s", fmt.seconds),
        ("realistic_time", "realistic_time_s", fmt.seconds),
        ("required", "required_bytes", fmt.bytes_),
        ("available", "available_bytes", fmt.bytes_),
    )

    max_context: int = Field(
        description="Tokens of context before the step (seq_len); 0 when not even 1 fits or "
        "meets the bound."
    )
    limited_by: ContextLimit
    memory_context: int = Field(
        description="The longest context that fits in memory (0: not even 1)."
    )
    latency_context: int | None = Field(
        description="With max_tpot_ms: the longest context whose realistic step time meets it, "
        "searched up to the other limits (0: not even 1); null without."
    )
    model_context: int = Field(
        description="The longest the model's positions allow: max_position_embeddings - 1 (the "
        "step's token takes the last position)."
    )
    max_step_time_s: float | None = Field(description="max_tpot_ms in seconds; null without.")
    expected_time_s: float | None = Field(description="The step at max_context; null at 0.")
    realistic_time_s: float | None = Field(description="The step at max_context; null at 0.")
    required_bytes: float | None = Field(
        description="Memory per chip at max_context (as /memory-fit's); null at 0."
    )
    available_bytes: float


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
