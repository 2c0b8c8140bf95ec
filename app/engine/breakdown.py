"""Where a transformer step goes, operation by operation (docs/formulas.md#breakdown).

The FLOPs and bytes of a prefill, a decode step and a training step (transformer.py,
training/step.py) are sums of these terms, so a breakdown adds up to the totals by
construction. Each term's time is its own roofline at the step's peak (a sparse linear
layer's at the sparse rate, fp8 training's attention at the bf16 peak), max(FLOPs / peak,
bytes / bandwidth), plus the seconds it spends beside the roofs (a collective, a pipeline's
idle slots); its share is that time over the sum of the terms' times.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.engine.hardware import Chip
from app.engine.published import ATTENTION_PACE
from app.engine.roofline import WIDE, Bound, Roofline, roofline_time


@dataclass(frozen=True, slots=True)
class Term:
    """One operation of a step, over its `count` occurrences (layers, or 1), on one chip."""

    name: str
    count: float
    flops: float = 0.0
    bytes: float = 0.0
    seconds: float = 0.0  # beside the roofs: a collective, pipeline idle
    regime: Bound | None = None  # what `seconds` are (communication, overhead)
    sparse: bool = False  # products of 2:4 sparse weights: at the sparse rate
    wide: bool = False  # products kept at 16 bits in a narrower step: at the WIDE peak
    flash: bool = False  # a fused (flash) attention kernel's: at its pace (`sustained_times`)
    warp: bool = False  # issued as warp-level MMA (FlashAttention-2 on Hopper and later)


@dataclass(frozen=True, slots=True)
class Share:
    """A term placed on the step's roofline."""

    name: str
    count: float
    flops: float
    bytes: float
    time: float
    share: float
    bound: Bound


def totals(terms: Sequence[Term]) -> tuple[float, float]:
    """The FLOPs and bytes of the terms together."""
    return sum(t.flops for t in terms), sum(t.bytes for t in terms)


def _rates(terms: Sequence[Term], roof: Roofline, chip: Chip | None) -> tuple[float, float, float]:
    """The (dense, sparse, wide) FLOP rates the terms run at on `roof`'s peak: `chip`'s own
    for each where some are sparse or wide (the step's peak is then a blend)."""
    dense = sparse = wide = roof.peak.flops_per_s
    if chip is not None and any(t.sparse or t.wide for t in terms):
        dense = chip.peak(roof.peak.dtype, roof.peak.unit).flops_per_s
        if any(t.sparse for t in terms):
            sparse = chip.sparse_peak(roof.peak.dtype).flops_per_s
        if any(t.wide for t in terms):
            wide = chip.peak(WIDE, roof.peak.unit).flops_per_s
    return dense, sparse, wide


def term_times(
    terms: Sequence[Term], roof: Roofline, chip: Chip | None = None
) -> list[tuple[float, float]]:
    """Each term's (compute, memory) seconds at `roof`'s peaks and bandwidth (`shares`)."""
    dense, sparse, wide = _rates(terms, roof, chip)
    return [
        (
            t.flops / (sparse if t.sparse else wide if t.wide else dense),
            t.bytes / roof.memory_bandwidth,
        )
        for t in terms
    ]


def sustained_times(terms: Sequence[Term], roof: Roofline, chip: Chip) -> list[tuple[float, float]]:
    """Each term's (compute, memory) seconds at the chip's sustained fractions (`roof`'s), a
    fused attention kernel's compute at the pace published ones reach (`ATTENTION_PACE`),
    one issued as warp-level MMA held to the chip's `warp_mma` share of the peak."""
    f_c, f_m = roof.sustained_compute, roof.sustained_memory
    return [
        (
            compute
            / (chip.warp_sustained(f_c) if t.warp else f_c)
            * (ATTENTION_PACE if t.flash else 1.0),
            memory / f_m,
        )
        for t, (compute, memory) in zip(terms, term_times(terms, roof, chip), strict=True)
    ]


def serial_busy(terms: Sequence[Term], roof: Roofline, chip: Chip) -> float:
    """The sustained-kernel time of a pass whose terms run one after another, each its own
    kernels: the sum of each term's roofline at its sustained rates (`sustained_times`).
    A kernel overlaps its own compute and memory, never the next kernel's: a memory-bound
    term (unfused scores, the residual stream) adds to the compute-bound GEMMs around it
    (docs/formulas.md#realistic-time)."""
    return sum(roofline_time(c, m) for c, m in sustained_times(terms, roof, chip))


def overlapped_busy(terms: Sequence[Term], roof: Roofline, chip: Chip) -> float:
    """The sustained-kernel time of a step whose terms' compute and memory overlap as one
    roofline (a training step: its published runs give its FLOPs, not its memory-bound
    kernels): max(sum of the compute, sum of the memory) at the sustained rates
    (`sustained_times`)."""
    times = sustained_times(terms, roof, chip)
    return roofline_time(sum(c for c, _ in times), sum(m for _, m in times))


def shares(terms: Sequence[Term], roof: Roofline, chip: Chip | None = None) -> tuple[Share, ...]:
    """The terms on `roof`'s peak and bandwidth: each one's time, share and regime. Where some
    are products of sparse weights, or kept at 16 bits in a narrower step, the step's peak is
    a blend: each term is then at `chip`'s own rate for it, sparse, wide or dense (the chip as
    the step's software drives it)."""
    placed = []
    for term, (compute, memory) in zip(terms, term_times(terms, roof, chip), strict=True):
        regime = term.regime or (Bound.COMPUTE if compute >= memory else Bound.MEMORY)
        placed.append((term, roofline_time(compute, memory) + term.seconds, regime))
    whole = sum(time for _, time, _ in placed)
    return tuple(
        Share(t.name, t.count, t.flops, t.bytes, time, time / whole if whole else 0.0, regime)
        for t, time, regime in placed
    )
