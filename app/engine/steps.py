"""Rooflines of work run one after another: the kernels of a forward pass, two phases
combined (a prefill then its decode steps), and runs of steps whose costs grow linearly
(decode at a growing context) summed in closed form (docs/formulas.md#transformer-workloads)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence

from app.engine.breakdown import Term, serial_busy, sustained_times
from app.engine.hardware import Chip, Peak
from app.engine.roofline import Roofline, blend, place
from app.engine.transformer import Precision, work_of


def combine(first: Roofline, second: Roofline) -> Roofline:
    """Two rooflines run one after the other (e.g. prefill then decode): times add."""
    if (first.peak.dtype, first.peak.unit) != (second.peak.dtype, second.peak.unit):
        raise ValueError("cannot combine work that runs at different peaks")
    realistic = first.realistic_time + second.realistic_time
    flops, compute_time = first.flops + second.flops, first.compute_time + second.compute_time
    return Roofline(
        flops=flops,
        bytes=first.bytes + second.bytes,
        peak=_together(first, second, flops, compute_time),
        memory_bandwidth=first.memory_bandwidth,
        compute_time=compute_time,
        memory_time=first.memory_time + second.memory_time,
        communication_time=first.communication_time + second.communication_time,
        expected_time=first.expected_time + second.expected_time,
        realistic_time=realistic,
        sustained_compute=_sustained_together(first, second),
        sustained_memory=first.sustained_memory,
        sustained_time=realistic,
        realistic_low=realistic,
        realistic_high=realistic,
    )


def _together(first: Roofline, last: Roofline, flops: float, compute_time: float) -> Peak:
    """The peak of two rooflines' work together: theirs where they share it, else the blend
    (sparse linear layers beside dense attention in steps of different shares)."""
    if first.peak == last.peak or not compute_time:
        return first.peak
    return blend(first.peak, flops, compute_time)


def _sustained_together(first: Roofline, last: Roofline) -> float:
    """The sustained compute share of two rooflines' work together: theirs where they share
    it, else their compute time over its sustained time."""
    if first.sustained_compute == last.sustained_compute:
        return first.sustained_compute
    sustained = (
        first.compute_time / first.sustained_compute + last.compute_time / last.sustained_compute
    )
    return (first.compute_time + last.compute_time) / sustained


def place_pass(terms: Sequence[Term], precision: Precision, chip: Chip, comm: float) -> Roofline:
    """A forward pass's terms on `chip`'s roofline, `comm` seconds of collectives after them:
    the ideal of their FLOPs and bytes together, the sustained time of their kernels one
    after another (`serial_busy`)."""
    roof = place(work_of(terms, precision), chip, comm)
    return roof.with_busy(serial_busy(terms, roof, chip))


def _sum_linear(lo: int, hi: int, at_lo: float, at_hi: float) -> float:
    """Sum over integers lo..hi of a function linear in x (exact: the trapezoid rule)."""
    return (hi - lo + 1) * (at_lo + at_hi) / 2


def _sum_max_linear(lo: int, hi: int, a: tuple[float, float], b: tuple[float, float]) -> float:
    """Sum over integers lo..hi of max(f, g), for f, g linear with f(lo), f(hi) = a, likewise b.

    Split at the crossover so that each part sums one linear function in closed form.
    """
    d_lo, d_hi = a[0] - b[0], a[1] - b[1]
    if d_lo * d_hi >= 0 or hi == lo:
        winner = a if d_lo + d_hi >= 0 else b
        return _sum_linear(lo, hi, *winner)
    cross = lo + int(d_lo / (d_lo - d_hi) * (hi - lo))  # last integer before the crossover

    def at(x: int, f: tuple[float, float]) -> float:
        return f[0] + (f[1] - f[0]) * (x - lo) / (hi - lo)

    first = _sum_linear(lo, cross, max(at(lo, a), at(lo, b)), max(at(cross, a), at(cross, b)))
    last = _sum_linear(
        cross + 1, hi, max(at(cross + 1, a), at(cross + 1, b)), max(at(hi, a), at(hi, b))
    )
    return first + last


def _serial_run(
    ends: tuple[Sequence[Term], Sequence[Term]],
    placed: tuple[Roofline, Roofline],
    chip: Chip,
    lo: int,
    hi: int,
) -> float:
    """The sustained-kernel time of steps lo..hi whose terms grow linearly from the first
    step's to the last's, each term its own kernels run after the others (`serial_busy`):
    per term, the sum of its sustained roofline over the steps, in closed form."""
    first, last = placed
    # each end at its own sustained rates: a term's sustained compute time is linear in x
    times = zip(
        sustained_times(ends[0], first, chip), sustained_times(ends[1], last, chip), strict=True
    )
    return sum(
        _sum_max_linear(lo, hi, (c_lo, c_hi), (m_lo, m_hi)) for (c_lo, m_lo), (c_hi, m_hi) in times
    )


def _linear_run(
    first: Roofline, last: Roofline, lo: int, hi: int, *, comm: float, busy: float
) -> Roofline:
    """Steps lo..hi whose costs grow linearly from `first` to `last`, summed exactly, with
    `busy` seconds of sustained kernels (`_serial_run`)."""
    n = hi - lo + 1
    s_m = first.sustained_memory
    ideal = _sum_max_linear(
        lo, hi, (first.compute_time, last.compute_time), (first.memory_time, last.memory_time)
    )
    realistic = n * comm + busy
    flops = _sum_linear(lo, hi, first.flops, last.flops)
    compute_time = _sum_linear(lo, hi, first.compute_time, last.compute_time)
    return Roofline(
        flops=flops,
        bytes=_sum_linear(lo, hi, first.bytes, last.bytes),
        peak=_together(first, last, flops, compute_time),
        memory_bandwidth=first.memory_bandwidth,
        compute_time=compute_time,
        memory_time=_sum_linear(lo, hi, first.memory_time, last.memory_time),
        communication_time=n * comm,
        expected_time=ideal + n * comm,
        realistic_time=realistic,
        sustained_compute=_sustained_together(first, last),
        sustained_memory=s_m,
        sustained_time=realistic,
        realistic_low=realistic,
        realistic_high=realistic,
    )


def place_steps(
    step: Callable[[int], Sequence[Term]],
    precision: Precision,
    lo: int,
    hi: int,
    chip: Chip,
    *,
    communication_per_step: float = 0.0,
    breakpoints: Sequence[int] = (),
) -> Roofline:
    """Steps x = lo..hi run one after another (e.g. decode steps at growing context), each
    the terms `step(x)` in `precision`.

    `step(x)` must be linear in x between consecutive `breakpoints`; then the sum of the
    per-step roofline times (and of each term's sustained roofline: `serial_busy`) is
    computed in closed form, so 10^7 steps cost what 1 does.
    """
    edges = sorted({lo, hi + 1, *(b for b in breakpoints if lo < b <= hi)})
    parts: list[Roofline] = []
    for start, stop in itertools.pairwise(edges):
        ends = step(start), step(stop - 1)
        first, last = (place(work_of(terms, precision), chip) for terms in ends)
        busy = _serial_run(ends, (first, last), chip, start, stop - 1)
        parts.append(
            _linear_run(first, last, start, stop - 1, comm=communication_per_step, busy=busy)
        )
    return functools.reduce(combine, parts)
