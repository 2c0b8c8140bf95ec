"""Does a measured runtime make sense? (docs/formulas.md#verdict)

ratio = measured / expected, where expected is the ideal roofline time: the physical floor.
Beside it, where the run sits against what published runs of the same kind of work reach:
the realistic range (app/engine/realism.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from app.engine import prose
from app.engine.errors import InvalidInput
from app.engine.roofline import Bound, Roofline

# Within 1.5x of the floor is about as close as tuned kernels get: the catalog's sustained
# fractions (e.g. ~0.8 of matmul peak on H100) already account for most of that gap.
NEAR_ROOFLINE = 1.5
# An order of magnitude: no tuning of a right implementation loses that much.
ORDER_OF_MAGNITUDE = 10.0


class Verdict(StrEnum):
    """How a measurement compares with the roofline."""

    FASTER_THAN_ROOFLINE = "faster_than_roofline"
    NEAR_ROOFLINE = "near_roofline"
    ROOM_TO_IMPROVE = "room_to_improve"
    ORDER_OF_MAGNITUDE_SLOWER = "order_of_magnitude_slower"


class AgainstPublished(StrEnum):
    """Where a measurement sits against the realistic range of published runs."""

    FASTER = "faster_than_published"
    WITHIN = "within_published"
    SLOWER = "slower_than_published"


@dataclass(frozen=True, slots=True)
class Judgement:
    """A measurement judged against its roofline and against published runs."""

    measured_time: float
    ratio: float
    verdict: Verdict
    advice: tuple[str, ...]
    realistic_ratio: float  # measured / realistic
    against_published: AgainstPublished
    achieved_flops_per_s: float  # the work's FLOPs over the measured time
    achieved_bytes_per_s: float  # its bytes over the measured time
    flops_share_of_peak: float  # of the peak its dtype and unit run at
    bytes_share_of_bandwidth: float  # of the memory bandwidth

    @property
    def efficiency(self) -> float:
        """The fraction of the roofline reached (expected / measured)."""
        return efficiency(self.ratio)


REGRESSION = "regression"  # a gate choice beside the verdicts: slower than the baseline


def gate_choices(*, regression: bool = True) -> frozenset[str]:
    """What a CI gate may fail on: the verdicts, and (where a run is compared with a stored
    one) a regression."""
    return frozenset({*(v.value for v in Verdict), *([REGRESSION] if regression else [])})


def efficiency(ratio: float) -> float:
    """expected / measured, the fraction of the roofline a run reached, from its ratio
    measured / expected."""
    return 1 / ratio


def judge(roofline: Roofline, measured_time: float, specific: Sequence[str] = ()) -> Judgement:
    """Compare `measured_time` (seconds) with the roofline and say what to do next. For a run
    slower than the roofline, the `specific` advice (on the kind of work, with its numbers:
    app/services/work_advice.py) follows the verdict's own, in place of its common gaps."""
    if not (math.isfinite(measured_time) and measured_time > 0):
        raise InvalidInput(
            "measured_time_s", f"must be a positive number of seconds, got {measured_time}"
        )
    ratio = measured_time / roofline.expected_time
    place = _against_published(roofline, measured_time)
    if ratio < 1:
        verdict = Verdict.FASTER_THAN_ROOFLINE
    elif ratio < NEAR_ROOFLINE:
        verdict = Verdict.NEAR_ROOFLINE
    elif ratio < ORDER_OF_MAGNITUDE:
        verdict = Verdict.ROOM_TO_IMPROVE
    else:
        verdict = Verdict.ORDER_OF_MAGNITUDE_SLOWER
    advice = _advice(verdict, roofline, ratio)
    if verdict is not Verdict.FASTER_THAN_ROOFLINE:
        if specific and verdict is Verdict.ROOM_TO_IMPROVE and roofline.bound not in _REGIME_ADVICE:
            advice = advice[:-1]  # the common gaps, named for this work instead
        advice = (*advice, *specific, *_published_advice(place, roofline, measured_time))
    realistic_ratio = measured_time / roofline.realistic_time
    flops_rate, bytes_rate = roofline.flops / measured_time, roofline.bytes / measured_time
    return Judgement(
        measured_time,
        ratio,
        verdict,
        advice,
        realistic_ratio,
        place,
        achieved_flops_per_s=flops_rate,
        achieved_bytes_per_s=bytes_rate,
        flops_share_of_peak=flops_rate / roofline.peak.flops_per_s,
        bytes_share_of_bandwidth=bytes_rate / roofline.memory_bandwidth,
    )


def _against_published(roof: Roofline, measured_time: float) -> AgainstPublished:
    if measured_time < roof.realistic_low:
        return AgainstPublished.FASTER
    if measured_time > roof.realistic_high:
        return AgainstPublished.SLOWER
    return AgainstPublished.WITHIN


def _published_advice(
    place: AgainstPublished, roof: Roofline, measured_time: float
) -> tuple[str, ...]:
    over = measured_time / roof.realistic_time
    if place is AgainstPublished.WITHIN:
        return (
            "Within the range published runs of this kind of work reach on this chip: as fast "
            "as tuned software gets. To go faster, change the work (batch, precision, fusion, "
            "parallel layout), not the implementation.",
        )
    if place is AgainstPublished.FASTER:
        return (
            "Faster than the published runs of this kind of work on this chip: better than "
            "typical tuned software (or a smaller workload ran than the one described).",
        )
    return (
        f"{prose.times(over)} the realistic estimate, above the range published runs reach: the "
        "implementation, not the hardware, is the limit.",
    )


def _advice(verdict: Verdict, roof: Roofline, ratio: float) -> tuple[str, ...]:
    bound = roof.bound
    gap = f"{prose.times(ratio)} the roofline time"
    if verdict is not Verdict.FASTER_THAN_ROOFLINE and bound in _REGIME_ADVICE:
        return _REGIME_ADVICE[bound]
    if verdict is Verdict.FASTER_THAN_ROOFLINE:
        return (
            f"Measured {prose.times(efficiency(ratio), 2)} faster than the hardware allows: the "
            "measurement or the inputs are wrong.",
            "GPU work is asynchronous: synchronise (torch.cuda.synchronize()) before reading "
            "the clock, and time several iterations after a warm-up.",
            "Check the units (seconds vs milliseconds) and that no result was cached.",
            "Check that the chip, dtype and sizes given are what actually ran "
            "(e.g. fp8 or sparsity where bf16 was assumed, a smaller batch or sequence).",
        )
    advice: list[str]
    if verdict is Verdict.NEAR_ROOFLINE:
        if bound is Bound.MEMORY:
            advice = [
                "Close to the memory roofline: only moving fewer bytes helps.",
                "Use narrower dtypes: fp32 to bf16, bf16 weights to int8/int4 (quantisation), "
                "an fp8 KV cache.",
                "Fuse adjacent ops so intermediates stay on chip.",
                "In decode, raise the batch: weights are read once per step for every sequence.",
            ]
        else:
            advice = [
                "Close to the compute roofline: the chip is saturated.",
                "Lower latency needs less work: a smaller batch (trading throughput), pruning, "
                "distillation, or a lower-precision matrix unit (fp8) where accuracy allows.",
            ]
        return tuple(advice)
    if verdict is Verdict.ROOM_TO_IMPROVE:
        roof_name = "compute" if bound is Bound.COMPUTE else "memory bandwidth"
        return (
            f"At {gap}, {roof_name}-bound: there is room to improve.",
            "Profile the slowest kernels (torch.profiler, Nsight Systems) and compare each with "
            "its own roofline.",
            "Common gaps: unfused elementwise ops, matmul shapes that tile poorly (dimensions "
            "not multiples of 64/128), small batches that leave the chip idle between kernels.",
        )
    return (
        f"At {gap}: an order of magnitude off, so something structural is wrong.",
        "Are the kernels compiled and fused (torch.compile, CUDA graphs), or launched one small "
        "op at a time from Python?",
        "Is the data on the device, or copied between host and device every step?",
        "Are there non-vectorised (Python-loop) ops, or intermediates materialised that need not "
        "be?",
        "If the work is tiny, fixed overheads (framework dispatch, kernel launches) dominate: "
        "measure at two sizes; time that barely grows with the work means overhead-bound.",
    )


_REGIME_ADVICE = {
    Bound.COMMUNICATION: (
        "Communication-bound: the collectives on the critical path take longer than the "
        "chip's own work.",
        "Overlap them with compute (asynchronous tensor/sequence parallelism, bucketed "
        "gradient reduction), send fewer and larger messages, or lower the degree that "
        "communicates (a smaller tp, more data parallelism).",
        "Keep tensor parallelism inside one scale-up domain (NVLink, xGMI, ICI): across the "
        "network each collective is several times slower.",
    ),
    Bound.OVERHEAD: (
        "Overhead-bound: fixed costs (kernel launches, the framework's host work, collective "
        "latencies) take longer than the work itself.",
        "Capture the step in a CUDA graph or compile it (torch.compile, a serving engine), so "
        "the host launches once instead of once per op.",
        "Give each launch more work: a larger batch, fused kernels, fewer synchronisations "
        "(.item(), .cpu(), prints) in the loop.",
    ),
}
