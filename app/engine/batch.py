"""The optimal batch (docs/formulas.md#optimal-batch): the smallest compute-bound batch that fits.

Every search here is over a monotone predicate. For one forward pass of a dense model (a
decode step, a prefill) every quantity the search and its sweep read is affine in the batch,
or a maximum of affine ones, so two exact estimates, at batch 1 and at MAX_BATCH, give them at
any batch in closed form: the answers are where lines cross, checked on the lines at the
crossing and one batch below, and the sweep is evaluated on the lines. Where the lines cannot
decide (a crossing within 1e-9 of a tie, far above their rounding) and for the other workloads
(MoE expert traffic, generate's per-step maxima, training), the exact estimate decides: a
closed-form guess checked in two evaluations, then galloping and bisection, a few dozen
evaluations at most, never one per batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from app.engine.architecture import Architecture
from app.engine.breakdown import sustained_times
from app.engine.errors import InvalidInput
from app.engine.fit import max_batch as largest_fitting_batch
from app.engine.hardware import Chip
from app.engine.realism import Practice, at_collective_bandwidth
from app.engine.roofline import Bound, regime, roofline_time
from app.engine.transformer import Phase
from app.engine.workload import (
    MAX_BATCH,
    TransformerEstimate,
    TransformerSpec,
    estimate,
    ideal_pass,
    pass_realism,
)

# Throughput at this fraction of its large-batch limit is "close enough"
# (docs/formulas.md#optimal-batch).
NEAR_ASYMPTOTE = 0.9
_SWEEP_POINTS = 24  # powers of two shown in the sweep, plus the batches named in the answer


class LimitedBy(StrEnum):
    """What sets the optimal batch."""

    RIDGE = "ridge"
    MEMORY = "memory"
    LATENCY = "latency"  # a bound on the realistic time of a decode step or a prefill


# the lines decide a comparison only when its sides differ by more than this, relatively:
# far above their rounding (a few units in the last place), far below any real difference
_CLEAR = 1e-9


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """One batch size of the sweep: its times (seconds), memory (bytes), rate and regime."""

    batch: int
    compute_time: float
    memory_time: float
    expected_time: float
    realistic_time: float
    memory_required: float
    fits: bool
    tokens_per_s: float
    bound: Bound

    @classmethod
    def of(cls, batch: int, result: TransformerEstimate) -> SweepPoint:
        """The point of an exact estimate at `batch`."""
        roof = result.roofline
        return cls(
            batch=batch,
            compute_time=roof.compute_time,
            memory_time=roof.memory_time,
            expected_time=roof.expected_time,
            realistic_time=roof.realistic_time,
            memory_required=result.memory.total,
            fits=result.fits,
            tokens_per_s=result.tokens_per_s,
            bound=roof.bound,
        )


@dataclass(frozen=True, slots=True)
class Line:
    """value(b) = at_one + slope (b - 1): a quantity that is affine in the batch."""

    at_one: float
    slope: float

    @classmethod
    def through(cls, at_one: float, at_max: float) -> Line:
        """The line through its values at batch 1 and at MAX_BATCH (so wide apart that the
        slope keeps all its digits, even beside a large constant such as the weights)."""
        return cls(at_one, (at_max - at_one) / (MAX_BATCH - 1))

    def at(self, batch: int) -> float:
        return self.at_one + self.slope * (batch - 1)

    def scaled(self, factor: float) -> Line:
        return Line(self.at_one * factor, self.slope * factor)

    def plus(self, other: Line) -> Line:
        return Line(self.at_one + other.at_one, self.slope + other.slope)

    def first_above(self, other: Line) -> int | None:
        """The smallest batch >= 1 where self >= other, or None if there is none."""
        gap, closing = other.at_one - self.at_one, self.slope - other.slope
        if gap <= 0:
            return 1
        if closing <= 0:
            return None
        return 1 + math.ceil(gap / closing)


BATCH = Line(1.0, 1.0)  # the batch itself


@dataclass(frozen=True, slots=True)
class OptimalBatch:
    """The optimal batch and the numbers it came from."""

    optimal_batch: int | None  # None: not even batch 1 fits (or meets the latency bound)
    limited_by: LimitedBy
    ridge_batch: int | None  # None: no batch up to MAX_BATCH is compute-bound
    max_batch: int
    throughput_asymptote: float  # tokens/s as the batch grows without bound
    asymptotic_intensity: float  # FLOP/B as the batch grows without bound
    ridge_intensity: float  # FLOP/B where the compute and memory roofs meet
    near_asymptote_batch: int  # smallest batch within NEAR_ASYMPTOTE of it
    sweep: tuple[SweepPoint, ...]
    # with a bound on the realistic step time: the largest batch within it (0: not even 1)
    latency_batch: int | None = None


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


def optimal_batch(
    arch: Architecture, chip: Chip, spec: TransformerSpec, max_step_time: float | None = None
) -> OptimalBatch:
    """The smallest batch whose compute time >= memory time that fits in memory.

    If that ridge batch does not fit, the largest batch that fits; if no batch is compute-bound
    (long-context decode: intensity tends to 2 N_mm / (C kv)), also the largest that fits, with
    the throughput asymptote and the batch reaching 90% of it. The spec's own batch is only
    validated: the search does not depend on it. `max_step_time` (seconds; decode or prefill)
    bounds the realistic time of one decode step (the time per output token) or of the
    prefill (the time to first token): the batch is then also at most the largest within it.
    """
    if max_step_time is not None and spec.phase not in (Phase.DECODE, Phase.PREFILL):
        raise ValueError("a step-time bound applies to a decode step or a prefill")
    if spec.batch != 1 or spec.phase is Phase.TRAINING:
        # validates the spec with its own batch (at batch 1, the search's first estimate does)
        estimate(arch, chip, spec)
    parallel = spec.training.parallel
    if spec.phase is Phase.TRAINING and (parallel.dp * parallel.ep > 1 or parallel.micro_batch):
        raise InvalidInput(
            "micro_batch" if parallel.micro_batch else "dp",
            "the optimal batch is searched for one replica: leave dp, ep and micro_batch unset",
        )
    return search(arch, chip, spec.with_batch(1), max_step_time)


def search(
    arch: Architecture, chip: Chip, spec: TransformerSpec, max_step_time: float | None = None
) -> OptimalBatch:
    """`optimal_batch` of a validated spec (at batch 1: the search does not depend on it)."""
    seen: dict[int, TransformerEstimate] = {}  # the searches and the sweep share batches

    def at(batch: int) -> TransformerEstimate:
        if batch not in seen:
            seen[batch] = estimate(arch, chip, spec.with_batch(batch))
        return seen[batch]

    def compute_bound(b: int) -> bool:
        return at(b).roofline.roof is Bound.COMPUTE

    # a dense model's forward pass is read on its lines, which need no realistic times
    lines = spec.phase in (Phase.DECODE, Phase.PREFILL) and arch.moe is None
    if lines:
        one, unbounded = (ideal_pass(arch, chip, spec.with_batch(b)) for b in (1, MAX_BATCH))
    else:
        one, unbounded = at(1), at(MAX_BATCH)
    asymptote = unbounded.tokens_per_s
    target = NEAR_ASYMPTOTE * asymptote

    def near_asymptote(b: int) -> bool:
        return at(b).tokens_per_s >= target

    max_batch = largest_fitting_batch(arch, chip, spec, one.memory)
    point: Callable[[int], SweepPoint]
    if lines:
        one_pass = _OnePass.through(
            one, unbounded, chip, Practice.of(pass_realism(arch, spec, chip.backend))
        )
        ridge = _decided(one_pass.compute_bound, one_pass.ridge_guess(), compute_bound)
        near = _decided(
            lambda b: one_pass.reaches(b, target), one_pass.reach_guess(target), near_asymptote
        )

        def point(b: int) -> SweepPoint:
            return one_pass.point(b, fits=b <= max_batch)

    else:
        # FLOPs and bytes are affine in the batch for a dense model (MoE weight traffic is
        # not): the lines through batches 1 and 2 give guesses that the searches check first
        first, two = one.roofline, at(2).roofline
        compute = Line(first.compute_time, two.compute_time - first.compute_time)
        memory = Line(first.memory_time, two.memory_time - first.memory_time)
        ridge = smallest_batch(compute_bound, guess=compute.first_above(memory))
        # throughput grows with the batch and reaches `asymptote` at MAX_BATCH by definition;
        # b tokens(1) >= 0.9 asymptote max(compute(b), memory(b)) holds past both lines'
        # crossings (communication and a pipeline's stretch left out: it is only a guess, and
        # checked)
        scale = target / one.tokens
        crossings = [BATCH.first_above(line.scaled(scale)) for line in (compute, memory)]
        bounds = [c for c in crossings if c is not None]
        guess = max(bounds) if len(bounds) == len(crossings) else None
        near = smallest_batch(near_asymptote, guess=guess)

        def point(b: int) -> SweepPoint:
            return SweepPoint.of(b, at(b))

    near = near or MAX_BATCH
    latency = None
    if max_step_time is not None:
        limit = max_step_time

        def over(b: int) -> bool:  # the row's answer, or the estimate's on a near-tie
            within = _at_least(limit, point(b).realistic_time)
            return at(b).roofline.realistic_time > limit if within is None else not within

        # the realistic step time grows with the batch: the largest batch within the bound is
        # one below the smallest over it
        latency = (smallest_batch(over) or MAX_BATCH + 1) - 1
    cap = max_batch if latency is None else min(max_batch, latency)
    if max_batch == 0:
        best: int | None = None
        limited_by = LimitedBy.MEMORY
    elif ridge is not None and ridge <= cap:
        best, limited_by = ridge, LimitedBy.RIDGE
    else:
        best = cap or None
        limited_by = LimitedBy.MEMORY if cap == max_batch else LimitedBy.LATENCY
    named = {b for b in (ridge, max_batch, near, best, latency) if b}
    return OptimalBatch(
        optimal_batch=best,
        limited_by=limited_by,
        ridge_batch=ridge,
        max_batch=max_batch,
        throughput_asymptote=asymptote,
        asymptotic_intensity=unbounded.roofline.arithmetic_intensity,
        ridge_intensity=unbounded.roofline.ridge_intensity,
        near_asymptote_batch=near,
        sweep=tuple(point(b) for b in _sweep_batches(named)),
        latency_batch=latency,
    )


def _decided(
    decide: Callable[[int], bool | None], guess: int | None, exact: Callable[[int], bool]
) -> int | None:
    """The smallest batch where a monotone predicate holds: the lines' `guess` when they
    `decide` the predicate there and not one batch below (None: too close to call), or that
    it holds nowhere; else the `exact` search."""
    if guess is None or guess > MAX_BATCH:
        if decide(MAX_BATCH) is False:
            return None
    elif decide(guess) is True and (guess == 1 or decide(guess - 1) is False):
        return guess
    return smallest_batch(exact, guess=guess)


def _at_least(value: float, bound: float) -> bool | None:
    """value >= bound, or None when they are within _CLEAR of each other."""
    if abs(value - bound) <= _CLEAR * max(abs(value), abs(bound)):
        return None
    return value >= bound


@dataclass(frozen=True, slots=True)
class _OnePass:
    """One forward pass of a dense model as a function of the batch: its compute, memory and
    communication times (each term's too), its memory and its tokens are affine in it, so
    lines through two exact estimates give them at any batch, and its ideal and realistic
    times and regime follow as the estimate's do (`serial_busy`, Practice.times, regime)."""

    compute: Line
    memory: Line
    communication: Line
    held: Line  # memory needed, bytes
    tokens: Line
    # each term's (compute, memory) seconds at its sustained rates (`sustained_times`)
    kernels: tuple[tuple[Line, Line], ...]
    practice: Practice

    @classmethod
    def through(
        cls, one: TransformerEstimate, top: TransformerEstimate, chip: Chip, practice: Practice
    ) -> _OnePass:
        """The pass through its estimates at batch 1 and at MAX_BATCH on `chip`."""
        a, b = one.roofline, top.roofline
        ends = zip(
            sustained_times(one.terms, a, chip), sustained_times(top.terms, b, chip), strict=True
        )
        return cls(
            compute=Line.through(a.compute_time, b.compute_time),
            memory=Line.through(a.memory_time, b.memory_time),
            communication=Line.through(a.communication_time, b.communication_time),
            held=Line.through(one.memory.total, top.memory.total),
            tokens=Line.through(one.tokens, top.tokens),
            kernels=tuple(
                (Line.through(c_one, c_top), Line.through(m_one, m_top))
                for (c_one, m_one), (c_top, m_top) in ends
            ),
            practice=practice,
        )

    def compute_bound(self, batch: int) -> bool | None:
        """Whether the compute term is at least the memory term (None: too close to call)."""
        return _at_least(self.compute.at(batch), self.memory.at(batch))

    def ridge_guess(self) -> int | None:
        return self.compute.first_above(self.memory)

    def reaches(self, batch: int, rate: float) -> bool | None:
        """Whether the ideal throughput reaches `rate` tokens/s (None: too close to call)."""
        return _at_least(self.point(batch, fits=False).tokens_per_s, rate)

    def reach_guess(self, rate: float) -> int | None:
        """Where tokens(b) >= rate ((max(compute, memory) + communication)(b)): past both
        lines' crossings."""
        crossings = [
            self.tokens.first_above(roof.plus(self.communication).scaled(rate))
            for roof in (self.compute, self.memory)
        ]
        bounds = [c for c in crossings if c is not None]
        return max(bounds) if len(bounds) == len(crossings) else None

    def point(self, batch: int, *, fits: bool) -> SweepPoint:
        """The sweep's row at `batch`."""
        compute, memory = self.compute.at(batch), self.memory.at(batch)
        communication = self.communication.at(batch)
        expected = roofline_time(compute, memory) + communication
        busy = sum(roofline_time(c.at(batch), m.at(batch)) for c, m in self.kernels)
        realistic, overhead = self.practice.median(
            busy, at_collective_bandwidth(communication), expected
        )
        return SweepPoint(
            batch=batch,
            compute_time=compute,
            memory_time=memory,
            expected_time=expected,
            realistic_time=realistic,
            memory_required=self.held.at(batch),
            fits=fits,
            tokens_per_s=self.tokens.at(batch) / expected,
            bound=regime(compute, memory, communication, expected, realistic, overhead),
        )


def _sweep_batches(named: set[int]) -> list[int]:
    """Powers of two up to twice the largest named batch (bounded), plus the named ones."""
    top = max(named, default=1)
    powers = min(_SWEEP_POINTS, max(1, math.ceil(math.log2(top)) + 2))
    return sorted({2**i for i in range(powers)} | named)
