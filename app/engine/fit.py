"""Does a workload fit in memory: how much it needs, the largest batch, the fewest chips."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, replace

from app.engine.architecture import Architecture
from app.engine.hardware import Chip
from app.engine.memory import MemoryBreakdown, largest_batch, tensor_parallel_share
from app.engine.training import layout, max_trainable_params
from app.engine.transformer import Phase
from app.engine.workload import (
    MAX_BATCH,
    TransformerSpec,
    estimate,
    memory_needed,
    training_memory_needed,
)


@dataclass(frozen=True, slots=True)
class MemoryFit:
    """Memory per chip of a workload against the chip's capacity."""

    breakdown: MemoryBreakdown
    capacity: float
    max_batch: int  # at this layout; 0 when not even batch 1 fits
    min_chips_layout: dict[str, int] | None  # the degrees of the fewest chips; None if none fits
    max_trainable_params: float | None = None  # training: most parameters whose state fits
    # training: the same, in what this workload's activations leave (those held fixed)
    max_trainable_params_with_activations: float | None = None

    @property
    def fits(self) -> bool:
        """Whether the workload fits as given."""
        return self.breakdown.fits_in(self.capacity)

    @property
    def min_chips(self) -> int | None:
        """The fewest chips that hold the workload at its batch: the product of the degrees."""
        return None if self.min_chips_layout is None else math.prod(self.min_chips_layout.values())


def _divisors(n: int) -> list[int]:
    """The divisors of `n`, ascending, found in sqrt(n) steps."""
    small = [p for p in range(1, math.isqrt(n) + 1) if n % p == 0]
    return small + [n // p for p in reversed(small) if p * p != n]


def tensor_parallel_degrees(arch: Architecture) -> list[int]:
    """Tensor-parallel degrees Megatron-style sharding allows: the divisors of the head count."""
    return _divisors(arch.attention.heads)


def _fewest_chips(arch: Architecture, chip: Chip, spec: TransformerSpec) -> dict[str, int] | None:
    """The layout of the fewest chips that hold `spec`: inference grows tp; training grows tp
    and pp over the layers' divisors (its dp, ep, cp and ZeRO stage stay as given): the first
    that fits in order of chips, then tp within one node, then pp.

    Memory per chip only falls as tp and pp grow (each term is divided by them, or held), so at
    each pp the layouts that fit are those from a smallest tp up, and that tp only falls as pp
    grows: a binary search per pp, below the last pp's tp, finds it; the first of those in
    order is the answer. Each layout's memory is computed exactly as `memory_needed` computes
    it there: in inference, one chip's share (`tensor_parallel_share`) of the memory at tp = 1.
    """
    tps = tensor_parallel_degrees(arch)
    parallel = spec.training.parallel
    training = spec.phase is Phase.TRAINING
    if training:
        base = layout(arch, spec.tp, spec.batch, parallel)
        pps = _divisors(arch.layers)

        def total(tp: int, pp: int) -> float:
            lay = replace(base, tp=tp, pp=pp)
            return training_memory_needed(arch, chip, spec, spec.batch, lay).total

    else:
        whole = memory_needed(arch, chip, replace(spec, tp=1), spec.batch)
        pps = [1]

        def total(tp: int, pp: int) -> float:
            return tensor_parallel_share(whole, arch, tp).total

    def order(tp: int, pp: int) -> tuple[int, bool, int]:
        return tp * pp, tp > parallel.chips_per_node, pp

    best: tuple[int, int] | None = None
    end = len(tps)  # tps[end:] fit at the last pp, so at this one
    for pp in pps:
        if best is not None and order(tps[0], pp) > order(*best):
            break  # no tp at this pp (or a larger one) comes first
        end = bisect.bisect_left(
            tps, True, hi=end, key=lambda tp: total(tp, pp) <= chip.memory_bytes
        )
        if end < len(tps) and (best is None or order(tps[end], pp) < order(*best)):
            best = tps[end], pp
    if best is None:
        return None
    tp, pp = best
    if not training:
        return {"tp": tp}
    return {"tp": tp, "pp": pp, "dp": parallel.dp, "ep": parallel.ep, "cp": parallel.cp}


def max_batch(
    arch: Architecture, chip: Chip, spec: TransformerSpec, at_one: MemoryBreakdown | None = None
) -> int:
    """The largest batch whose memory fits each chip at `spec`'s layout (0 if not even 1);
    `at_one`: its memory at batch 1 where the caller has it (an estimate's)."""

    def memory_at(batch: float) -> MemoryBreakdown:
        if batch == 1 and at_one is not None:
            return at_one
        return memory_needed(arch, chip, spec, batch)

    return min(largest_batch(memory_at, chip.memory_bytes), MAX_BATCH)


def memory_fit(arch: Architecture, chip: Chip, spec: TransformerSpec) -> MemoryFit:
    """Memory needed per chip, the largest batch that fits, the fewest chips that hold it and,
    for training, the most parameters whose training state fits at this layout: before
    activations, and in the memory this workload's activations leave. The second holds the
    given model's activations fixed (at its batch, sequence and layout) rather than scaling them
    with a smaller or larger model's width: for a narrower model it is a lower bound."""
    breakdown = estimate(arch, chip, spec).memory  # validates the spec
    largest = max_batch(arch, chip, spec)
    fewest = _fewest_chips(arch, chip, spec)
    if spec.phase is not Phase.TRAINING:
        return MemoryFit(breakdown, chip.memory_bytes, largest, fewest)
    lay = layout(arch, spec.tp, spec.batch, spec.training.parallel)
    usable = chip.memory_bytes - breakdown.reserve
    before, after = (
        max_trainable_params(max(0.0, room), lay, spec.training, spec.precision.compute)
        for room in (usable, usable - breakdown.activations)
    )
    return MemoryFit(breakdown, chip.memory_bytes, largest, fewest, before, after)
