"""The optimal batch (docs/formulas.md#optimal-batch): the smallest compute-bound batch that fits.

Every search here is over a monotone predicate: first a closed-form guess (FLOPs and bytes are
affine in the batch for a dense model), checked in two evaluations, then, if the guess was
wrong, galloping and bisection. A batch of 10^7 costs a few dozen evaluations at most, never
one per batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from app.engine.architecture import Architecture
from app.engine.errors import InvalidInput
from app.engine.fit import max_batch as largest_fitting_batch
from app.engine.hardware import Chip
from app.engine.roofline import Bound
from app.engine.transformer import Phase
from app.engine.workload import (
    MAX_BATCH,
    TransformerEstimate,
    TransformerSpec,
    estimate,
)

# Throughput at this fraction of its large-batch limit is "close enough"
# (docs/formulas.md#optimal-batch).
NEAR_ASYMPTOTE = 0.9
_SWEEP_POINTS = 24  # powers of two shown in the sweep, plus the batches named in the answer


class LimitedBy(StrEnum):
    """What sets the optimal batch."""

    RIDGE = "ridge"
    MEMORY = "memory"


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """One batch size of the sweep."""

    batch: int
    estimate: TransformerEstimate

    @property
    def bound(self) -> Bound:
        """Compute- or memory-bound at this batch."""
        return self.estimate.roofline.bound


@dataclass(frozen=True, slots=True)
class OptimalBatch:
    """The optimal batch and the numbers it came from."""

    optimal_batch: int | None  # None: not even batch 1 fits
    limited_by: LimitedBy
    ridge_batch: int | None  # None: no batch up to MAX_BATCH is compute-bound
    max_batch: int
    throughput_asymptote: float  # tokens/s as the batch grows without bound
    asymptotic_intensity: float  # FLOP/B as the batch grows without bound
    ridge_intensity: float  # FLOP/B where the compute and memory roofs meet
    near_asymptote_batch: int  # smallest batch within NEAR_ASYMPTOTE of it
    sweep: tuple[SweepPoint, ...]


def smallest_batch(
    predicate: Callable[[int], bool], upper: int = MAX_BATCH, guess: int | None = None
) -> int | None:
    """The smallest batch in 1..upper where a monotone (false..true) predicate holds.

    A `guess` is checked first, in two evaluations: by monotonicity it is the answer when the
    predicate holds there and not one batch below. Otherwise galloping then bisection: about
    2 log2(answer) evaluations, plus one at `upper`.
    """
    if (
        guess is not None
        and 1 <= guess <= upper
        and predicate(guess)
        and (guess == 1 or not predicate(guess - 1))
    ):
        return guess
    if not predicate(upper):
        return None
    hi = 1
    while hi < upper and not predicate(hi):
        hi = min(2 * hi, upper)
    lo = hi // 2 + 1 if hi > 1 else 1
    while lo < hi:
        mid = (lo + hi) // 2
        if predicate(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def optimal_batch(arch: Architecture, chip: Chip, spec: TransformerSpec) -> OptimalBatch:
    """The smallest batch whose compute time >= memory time that fits in memory.

    If that ridge batch does not fit, the largest batch that fits; if no batch is compute-bound
    (long-context decode: intensity tends to 2 N_mm / (C kv)), also the largest that fits, with
    the throughput asymptote and the batch reaching 90% of it. The spec's own batch is only
    validated: the search does not depend on it.
    """
    estimate(arch, chip, spec)  # validates the spec once, with its own batch
    parallel = spec.training.parallel
    if spec.phase is Phase.TRAINING and (parallel.dp * parallel.ep > 1 or parallel.micro_batch):
        raise InvalidInput(
            "micro_batch" if parallel.micro_batch else "dp",
            "the optimal batch is searched for one replica: leave dp, ep and micro_batch unset",
        )
    return search(arch, chip, spec.with_batch(1))


@lru_cache(maxsize=1024)  # pure, and asked again with the same inputs by every CI job
def search(arch: Architecture, chip: Chip, spec: TransformerSpec) -> OptimalBatch:
    """`optimal_batch` of a validated spec, whatever its batch (so key it with batch 1)."""
    seen: dict[int, TransformerEstimate] = {}  # the searches and the sweep share batches

    def at(batch: int) -> TransformerEstimate:
        if batch not in seen:
            seen[batch] = estimate(arch, chip, spec.with_batch(batch))
        return seen[batch]

    # FLOPs and bytes are affine in the batch for a dense model (MoE weight traffic is not):
    # the lines through batches 1 and 2 give guesses that the searches check first
    one, two = at(1).roofline, at(2).roofline
    compute = _Line(one.compute_time, two.compute_time - one.compute_time)
    memory = _Line(one.memory_time, two.memory_time - one.memory_time)
    ridge = smallest_batch(
        lambda b: at(b).roofline.roof is Bound.COMPUTE, guess=compute.first_above(memory)
    )
    max_batch = largest_fitting_batch(arch, chip, spec)
    unbounded = at(MAX_BATCH)
    asymptote = unbounded.tokens_per_s
    # throughput grows with the batch and reaches `asymptote` at MAX_BATCH by definition;
    # b tokens(1) >= 0.9 asymptote max(compute(b), memory(b)) holds past both lines' crossings
    # (communication and a pipeline's stretch left out: it is only a guess, and checked)
    scale = NEAR_ASYMPTOTE * asymptote / at(1).tokens
    crossings = [_BATCH.first_above(line.scaled(scale)) for line in (compute, memory)]
    bounds = [c for c in crossings if c is not None]
    guess = max(bounds) if len(bounds) == len(crossings) else None
    near = (
        smallest_batch(lambda b: at(b).tokens_per_s >= NEAR_ASYMPTOTE * asymptote, guess=guess)
        or MAX_BATCH
    )
    if max_batch == 0:
        best: int | None = None
        limited_by = LimitedBy.MEMORY
    elif ridge is not None and ridge <= max_batch:
        best, limited_by = ridge, LimitedBy.RIDGE
    else:
        best, limited_by = max_batch, LimitedBy.MEMORY
    named = {b for b in (ridge, max_batch, near, best) if b}
    return OptimalBatch(
        optimal_batch=best,
        limited_by=limited_by,
        ridge_batch=ridge,
        max_batch=max_batch,
        throughput_asymptote=asymptote,
        asymptotic_intensity=unbounded.roofline.arithmetic_intensity,
        ridge_intensity=unbounded.roofline.ridge_intensity,
        near_asymptote_batch=near,
        sweep=tuple(SweepPoint(b, at(b)) for b in _sweep_batches(named)),
    )


@dataclass(frozen=True, slots=True)
class _Line:
    """value(b) = at_one + slope (b - 1): a quantity that is affine in the batch."""

    at_one: float
    slope: float

    def scaled(self, factor: float) -> _Line:
        return _Line(self.at_one * factor, self.slope * factor)

    def first_above(self, other: _Line) -> int | None:
        """The smallest batch >= 1 where self >= other, or None if there is none."""
        gap, closing = other.at_one - self.at_one, self.slope - other.slope
        if gap <= 0:
            return 1
        if closing <= 0:
            return None
        return 1 + math.ceil(gap / closing)


_BATCH = _Line(1.0, 1.0)  # the batch itself


def _sweep_batches(named: set[int]) -> list[int]:
    """Powers of two up to twice the largest named batch (bounded), plus the named ones."""
    top = max(named, default=1)
    powers = min(_SWEEP_POINTS, max(1, math.ceil(math.log2(top)) + 2))
    return sorted({2**i for i in range(powers)} | named)
