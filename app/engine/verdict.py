"""Does a measured runtime make sense? (docs/formulas.md#verdict)

One headline from everything the answer knows, in this order: whether the workload fits in
the chip's memory at all; whether the run beat the physical floor (the ideal roofline time,
so the measurement is wrong), unless its working set fits in the chip's last-level cache and
the run is within the cache roof (cache-resident: app/engine/cache.py); then the run against
its floor: the ideal, or for work whose fixed costs outlast it (overhead-bound), the least
time those costs allow (the low end of the realistic range). Beside it, where the run sits
against what published runs of the same kind of work reach: the realistic range
(app/engine/realism.py), which the headline never contradicts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from app.engine import prose
from app.engine.advice_lines import (
    FEWER_LAUNCHES,
    REGIME_ADVICE,
    STRUCTURAL,
    host_advice,
    less_work,
    unfit_advice,
)
from app.engine.cache import CacheRoof, cache_advice, cache_resident
from app.engine.errors import InvalidInput
from app.engine.hardware import Chip
from app.engine.roofline import Bound, Roofline
from app.engine.transformer import Precision

# Within 1.5x of the floor is about as close as tuned kernels get: the catalog's sustained
# fractions (e.g. ~0.8 of matmul peak on H100) already account for most of that gap.
NEAR_ROOFLINE = 1.5
# An order of magnitude: no tuning of a right implementation loses that much.
ORDER_OF_MAGNITUDE = 10.0
# A host busy for 90% of an accelerator run's wall time had at most a tenth of it to wait for
# the device: the device was never ahead of it for long (docs/formulas.md#host-bound-runs).
HOST_BOUND = 0.9


class Verdict(StrEnum):
    """How a measurement compares with what the work allows (docs/api.md#verdicts)."""

    DOES_NOT_FIT = "does_not_fit"
    CACHE_RESIDENT = "cache_resident"
    FASTER_THAN_ROOFLINE = "faster_than_roofline"
    NEAR_ROOFLINE = "near_roofline"
    OVERHEAD_BOUND = "overhead_bound"
    ROOM_TO_IMPROVE = "room_to_improve"
    ORDER_OF_MAGNITUDE_SLOWER = "order_of_magnitude_slower"


class Floor(StrEnum):
    """What a run's time is judged against: the ideal roofline time, or the least time the
    fixed costs of overhead-bound work allow."""

    ROOFLINE = "roofline"
    FIXED_COSTS = "fixed_costs"


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
    judged_against: Floor
    floor_time: float  # the time judged against: the ideal, or the fixed costs' floor
    cpu_share: float | None = None  # the host's process CPU time / the measured time
    host_bound: bool | None = None  # None without a CPU time
    cache: CacheRoof | None = None  # the cache roof a cache-resident run is read under

    @property
    def efficiency(self) -> float:
        """The fraction of the roofline reached (expected / measured)."""
        return efficiency(self.ratio)

    @property
    def floor_ratio(self) -> float:
        """measured / the floor the run is judged against."""
        return self.measured_time / self.floor_time


REGRESSION = "regression"  # a gate choice beside the verdicts: slower than the baseline


def gate_choices(*, regression: bool = True) -> frozenset[str]:
    """What a CI gate may fail on: the verdicts, and (where a run is compared with a stored
    one) a regression."""
    return frozenset({*(v.value for v in Verdict), *([REGRESSION] if regression else [])})


def efficiency(ratio: float) -> float:
    """expected / measured, the fraction of the roofline a run reached, from its ratio
    measured / expected."""
    return 1 / ratio


@dataclass(frozen=True, slots=True)
class Standing:
    """A measured time against its roofline: the verdict and the figures behind it, without
    the advice (what a table of many runs reports for each)."""

    measured_time: float
    ratio: float  # measured / expected
    verdict: Verdict
    against_published: AgainstPublished
    judged_against: Floor
    floor_time: float  # the time judged against: the ideal, or the fixed costs' floor
    achieved_flops_per_s: float  # the work's FLOPs over the measured time
    achieved_bytes_per_s: float  # its bytes over the measured time
    cache: CacheRoof | None = None  # where the run is cache_resident, the cache that explains it

    @property
    def efficiency(self) -> float:
        """The fraction of the roofline reached (expected / measured)."""
        return efficiency(self.ratio)


def stand(
    roofline: Roofline, measured_time: float, *, fits: bool | None = None, chip: Chip | None = None
) -> Standing:
    """`measured_time` (seconds) against the roofline: its verdict (`fits` and `chip` as
    `judge` takes them), where it sits against published runs, and the rates it achieved."""
    if not (math.isfinite(measured_time) and measured_time > 0):
        raise InvalidInput(
            "measured_time_s", f"must be a positive number of seconds, got {measured_time}"
        )
    ratio = measured_time / roofline.expected_time
    place = _against_published(roofline, measured_time)
    against, floor = _floor(roofline)
    cache = None if fits is False else cache_resident(roofline, chip, measured_time)
    verdict = (
        Verdict.CACHE_RESIDENT
        if cache is not None
        else _verdict(ratio, measured_time / floor, against, place, fits)
    )
    return Standing(
        measured_time,
        ratio,
        verdict,
        place,
        against,
        floor,
        achieved_flops_per_s=roofline.flops / measured_time,
        achieved_bytes_per_s=roofline.bytes / measured_time,
        cache=cache,
    )


def judge(
    roofline: Roofline,
    measured_time: float,
    specific: Sequence[str] = (),
    *,
    fits: bool | None = None,
    chip: Chip | None = None,
    cpu_time: float | None = None,
    precision: Precision | None = None,
) -> Judgement:
    """Compare `measured_time` (seconds) with the roofline (`stand`) and say what to do next.

    `fits`: whether the workload fits in the chip's memory (None where no memory figure
    applies, e.g. a single kernel). For a run slower than its floor, the `specific` advice (on
    the kind of work, with its numbers: app/services/work_advice.py) follows the verdict's
    own, in place of its common gaps. `chip`, where given, names the narrower dtypes with a
    faster matrix peak that saturated compute-bound work could move to, and its last-level
    cache, which explains a run faster than the roofline whose working set fits in it
    (`cache_resident`, app/engine/cache.py). `cpu_time`, where
    given, is the host process's CPU time (seconds) over the same run on an accelerator: a
    host busy throughout a run slower than its floor puts the host-bound advice first
    (`host_bound`). `precision`, where given (a model's), keeps the advice to narrow dtypes
    to those that are not already narrow (`less_work`)."""
    standing = stand(roofline, measured_time, fits=fits, chip=chip)
    if cpu_time is not None and not (math.isfinite(cpu_time) and cpu_time > 0):
        raise InvalidInput("cpu_time_s", f"must be a positive number of seconds, got {cpu_time}")
    ratio, verdict, place = standing.ratio, standing.verdict, standing.against_published
    floor = standing.floor_time
    if standing.cache is not None:
        advice = cache_advice(standing.cache, roofline, measured_time)
    elif verdict is Verdict.DOES_NOT_FIT:
        advice = unfit_advice(ratio)
    else:
        advice = _advice(
            verdict,
            roofline,
            ratios=(ratio, measured_time / floor),
            floor=floor,
            place=place,
            chip=chip,
            precision=precision,
        )
        if verdict is not Verdict.FASTER_THAN_ROOFLINE:
            if (
                specific
                and verdict is Verdict.ROOM_TO_IMPROVE
                and place is AgainstPublished.SLOWER
                and roofline.bound not in REGIME_ADVICE
            ):
                advice = advice[:-1]  # the common gaps, named for this work instead
            elif specific and roofline.bound is Bound.COMMUNICATION:
                advice = advice[:1]  # what to do about this work's transfers, named instead
            advice = (*advice, *specific, *_published_advice(place, roofline, measured_time))
    cpu_share = None if cpu_time is None else cpu_time / measured_time
    busy = None if cpu_share is None else host_bound(cpu_share, verdict)
    if busy:
        advice = (host_advice(cpu_share or 0.0), *advice)
    return Judgement(
        measured_time,
        ratio,
        verdict,
        advice,
        measured_time / roofline.realistic_time,
        place,
        achieved_flops_per_s=standing.achieved_flops_per_s,
        achieved_bytes_per_s=standing.achieved_bytes_per_s,
        flops_share_of_peak=standing.achieved_flops_per_s / roofline.peak.flops_per_s,
        bytes_share_of_bandwidth=standing.achieved_bytes_per_s / roofline.memory_bandwidth,
        judged_against=standing.judged_against,
        floor_time=floor,
        cpu_share=cpu_share,
        host_bound=busy,
        cache=standing.cache,
    )


def host_bound(cpu_share: float, verdict: Verdict) -> bool:
    """Whether the host limited an accelerator run whose process CPU time was `cpu_share` of
    its wall time: busy for at least HOST_BOUND of it, in a run slower than its floor (a busy
    host is what a run at its roofline waits with, or one that cannot have run: not the
    limit)."""
    return cpu_share >= HOST_BOUND and verdict in _HOST_CAN_LIMIT


_HOST_CAN_LIMIT = frozenset(
    {Verdict.OVERHEAD_BOUND, Verdict.ROOM_TO_IMPROVE, Verdict.ORDER_OF_MAGNITUDE_SLOWER}
)


def _floor(roof: Roofline) -> tuple[Floor, float]:
    """What the run is judged against: for overhead-bound work the least time its fixed costs
    allow (the low end of the realistic range, which holds the costs at the low end of their
    spread), else the ideal."""
    if roof.bound is Bound.OVERHEAD:
        return Floor.FIXED_COSTS, roof.realistic_low
    return Floor.ROOFLINE, roof.expected_time


def _verdict(
    ratio: float,
    floor_ratio: float,
    against: Floor,
    place: AgainstPublished,
    fits: bool | None,
) -> Verdict:
    """The headline, from the ratio to the ideal and to the floor (docs/api.md#verdicts)."""
    if fits is False:
        return Verdict.DOES_NOT_FIT
    if ratio < 1:
        return Verdict.FASTER_THAN_ROOFLINE
    if against is Floor.FIXED_COSTS:
        # fixed costs have a spread of their own: within it (or below) is what they explain
        if place is not AgainstPublished.SLOWER:
            return Verdict.OVERHEAD_BOUND
    elif floor_ratio < NEAR_ROOFLINE:
        return Verdict.NEAR_ROOFLINE
    # an order of magnitude off is structural only where published runs of the work are not
    # as slow (a GEMM too small to fill the chip is, and is a gap to close, not a mistake)
    if floor_ratio < ORDER_OF_MAGNITUDE or place is not AgainstPublished.SLOWER:
        return Verdict.ROOM_TO_IMPROVE
    return Verdict.ORDER_OF_MAGNITUDE_SLOWER


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


def _advice(
    verdict: Verdict,
    roof: Roofline,
    *,
    ratios: tuple[float, float],
    floor: float,
    place: AgainstPublished,
    chip: Chip | None,
    precision: Precision | None,
) -> tuple[str, ...]:
    """The verdict's own advice, from the (ideal, floor) `ratios` of the run and its `place`
    against published runs."""
    ratio, floor_ratio = ratios
    bound = roof.bound
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
    if bound is Bound.OVERHEAD:
        head = (
            "Overhead-bound: the fixed costs (kernel launches, the framework's host work, "
            f"collective latencies) set a floor of {prose.seconds(floor)}, while the work "
            f"itself ideally takes {prose.seconds(roof.expected_time)}; measured "
            f"{prose.times(floor_ratio)} that floor"
        )
        if verdict is Verdict.OVERHEAD_BOUND:
            return (
                f"{head}, as published runs pay: this runtime makes sense for work this small.",
                *FEWER_LAUNCHES,
            )
        if verdict is Verdict.ROOM_TO_IMPROVE:
            return (f"{head}, more than the fixed costs explain.", *FEWER_LAUNCHES)
        return (
            f"{head}: an order of magnitude over it, so something structural is wrong.",
            *STRUCTURAL[:-1],
        )
    if bound in REGIME_ADVICE:
        return REGIME_ADVICE[bound]
    gap = f"{prose.times(ratio)} the roofline time"
    if verdict is Verdict.NEAR_ROOFLINE:
        if bound is Bound.MEMORY:
            head = "Close to the memory roofline: only moving fewer bytes helps."
        else:
            head = "Close to the compute roofline: the chip is saturated."
        return (head, *less_work(roof, chip, precision))
    if verdict is Verdict.ROOM_TO_IMPROVE:
        roof_name = "compute" if bound is Bound.COMPUTE else "memory bandwidth"
        if place is not AgainstPublished.SLOWER:
            # as close as published runs get: tuning the implementation is not where the room is
            return (
                f"At {gap}, {roof_name}-bound: published runs of this work get no closer, so "
                "the room is in changing the work, not in tuning its implementation.",
                *less_work(roof, chip, precision),
            )
        return (
            f"At {gap}, {roof_name}-bound: there is room to improve.",
            "Profile the slowest kernels (torch.profiler, Nsight Systems) and compare each with "
            "its own roofline.",
            "Common gaps: unfused elementwise ops, matmul shapes that tile poorly (dimensions "
            "not multiples of 64/128), small batches that leave the chip idle between kernels.",
        )
    return (f"At {gap}: an order of magnitude off, so something structural is wrong.", *STRUCTURAL)
