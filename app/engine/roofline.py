"""The roofline: the one place where max(compute, memory) is taken.

time = max(FLOPs / peak, bytes / bandwidth) (Williams, Waterman and Patterson, "Roofline: an
insightful visual performance model", CACM 2009). Arithmetic intensity = FLOPs / bytes; the
ridge ("machine balance") = peak / bandwidth; work is compute-bound at intensity >= ridge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum

from app.engine.errors import InvalidInput
from app.engine.hardware import SPARSE_SPEEDUP, Chip, Peak, ridge_intensity
from app.engine.stacks import Kind
from app.engine.tiling import fill
from app.engine.units import Dtype, Unit

# the dtype of the products that narrower training keeps at 16 bits: attention's score and
# value products, which fp8 training libraries leave in bf16 (docs/formulas.md#fp8-training)
WIDE = Dtype.BF16


class Bound(StrEnum):
    """What limits the work (its regime): a roof (compute, memory), the collectives on the
    critical path (communication), fixed costs (overhead: launches, framework steps), or the
    input pipeline that feeds it (input: app/engine/input_pipeline.py)."""

    COMPUTE = "compute"
    MEMORY = "memory"
    COMMUNICATION = "communication"
    OVERHEAD = "overhead"
    INPUT = "input"


@dataclass(frozen=True, slots=True)
class Work:
    """An amount of work: FLOPs, minimum bytes moved, and the dtype/unit whose peak applies."""

    flops: float
    bytes: float
    dtype: Dtype
    unit: Unit
    kind: Kind = Kind.CUSTOM  # which published runs its realistic time is calibrated on
    kernels: int = 1  # launches it takes
    tiles: int = 0  # a single GEMM's output tiles (app/engine/tiling.py); 0 otherwise
    tile_fill: float = 1.0  # the share of those tiles that is output, not padding
    # issued as Ampere's warp-level MMA (mma.sync: a FlashAttention-2 kernel), which reaches
    # at most the chip's `warp_mma` share of the matrix peak (as `Term.warp` in a pass)
    warp: bool = False
    # of `flops`, those of products whose weights are 2:4 structured-sparse: at
    # Chip.sparse_peak (docs/formulas.md#structured-sparsity); the rest at the dense peak
    sparse_flops: float = 0.0
    # of `flops`, those of products that run at the 16-bit (`WIDE`) matrix peak in work of a
    # narrower dtype: attention's in fp8 training (docs/formulas.md#fp8-training)
    wide_flops: float = 0.0

    def scaled(self, factor: float) -> Work:
        """The same work `factor` times."""
        return Work(
            self.flops * factor,
            self.bytes * factor,
            self.dtype,
            self.unit,
            self.kind,
            self.kernels,
            warp=self.warp,
            sparse_flops=self.sparse_flops * factor,
            wide_flops=self.wide_flops * factor,
        )


@dataclass(frozen=True, slots=True)
class Roofline:
    """Work placed on a chip's roofline. Times in seconds."""

    flops: float
    bytes: float
    peak: Peak
    memory_bandwidth: float
    compute_time: float
    memory_time: float
    communication_time: float
    expected_time: float
    realistic_time: float
    sustained_compute: float
    sustained_memory: float
    # what real software adds (app/engine/realism.py): the time at the sustained fractions
    # alone, the range published runs of this kind of work fall in, the fixed costs, and the
    # kernels launched; until realized, the realistic time is the sustained one and its range
    sustained_time: float
    realistic_low: float
    realistic_high: float
    overhead_time: float = 0.0
    kernels: int = 1
    # the realistic time per step of an input pipeline that feeds this work and is slower than
    # it (the step waits for its data: app/engine/input_pipeline.py); 0 where none is
    input_time: float = 0.0

    def realized(
        self,
        realistic: float,
        low: float,
        high: float,
        overhead: float | None = None,
        kernels: int | None = None,
    ) -> Roofline:
        """This roofline with what real software makes of it: its realistic time and range
        (its own realistic time kept as the sustained one), and its fixed costs and kernels
        where given."""
        return replace(
            self,
            realistic_time=realistic,
            sustained_time=self.realistic_time,
            realistic_low=low,
            realistic_high=high,
            overhead_time=self.overhead_time if overhead is None else overhead,
            kernels=self.kernels if kernels is None else kernels,
        )

    def with_compute_time(self, compute_time: float) -> Roofline:
        """This roofline as placed (not yet realized, without a schedule's stretch) with
        another compute time: its ideal and sustained times follow (`critical_path`)."""
        expected, sustained = critical_path(
            compute_time,
            self.memory_time,
            self.communication_time,
            (self.sustained_compute, self.sustained_memory),
        )
        placed = replace(self, compute_time=compute_time, expected_time=expected)
        return placed.with_busy(sustained - self.communication_time)

    def with_busy(self, busy: float) -> Roofline:
        """This roofline as placed (not yet realized) with another sustained-kernel time:
        `busy` seconds of its kernels (`serial_busy`), its collectives after them."""
        sustained = busy + self.communication_time
        return replace(
            self,
            realistic_time=sustained,
            sustained_time=sustained,
            realistic_low=sustained,
            realistic_high=sustained,
        )

    @property
    def arithmetic_intensity(self) -> float:
        """FLOPs per byte moved."""
        return self.flops / self.bytes

    @property
    def ridge_intensity(self) -> float:
        """The intensity at which the compute and memory roofs meet."""
        return ridge_intensity(self.peak.flops_per_s, self.memory_bandwidth)

    @property
    def roof(self) -> Bound:
        """The roof that limits the busy time (`roof_of`)."""
        return roof_of(self.compute_time, self.memory_time)

    @property
    def bound(self) -> Bound:
        """The regime: input where a slower input pipeline feeds the work, else `regime`."""
        if self.input_time > 0:
            return Bound.INPUT
        return regime(
            self.compute_time,
            self.memory_time,
            self.communication_time,
            self.expected_time,
            self.realistic_time,
            self.overhead_time,
        )


def roof_of(compute_time: float, memory_time: float) -> Bound:
    """The roof that limits the busy time: compute when the compute term is at least the
    memory term (intensity at or above the ridge), else memory."""
    return Bound.COMPUTE if compute_time >= memory_time else Bound.MEMORY


def regime(  # noqa: PLR0917 (the six times a Roofline holds, in its order)
    compute_time: float,
    memory_time: float,
    communication_time: float,
    expected_time: float,
    realistic_time: float,
    overhead_time: float,
) -> Bound:
    """The regime: communication when the collectives on the critical path take longer than
    the chip's own work, overhead when fixed costs do, else the roof."""
    busy = expected_time - communication_time
    if communication_time > busy:
        return Bound.COMMUNICATION
    if overhead_time > realistic_time - overhead_time:
        return Bound.OVERHEAD
    return roof_of(compute_time, memory_time)


def roofline_time(compute_time: float, memory_time: float) -> float:
    """The ideal roofline time: compute and memory perfectly overlapped."""
    return max(compute_time, memory_time)


def critical_path(
    compute_time: float,
    memory_time: float,
    communication_time: float,
    sustained: tuple[float, float],
    stretch: float = 1.0,
) -> tuple[float, float]:
    """(ideal, sustained) seconds of work whose compute and memory terms overlap, the busy
    time stretched by idle slots its schedule imposes, then collectives on the critical
    path; the sustained time at the (compute, memory) fractions of the peaks in `sustained`."""
    sustained_compute, sustained_memory = sustained
    ideal = stretch * roofline_time(compute_time, memory_time) + communication_time
    busy = roofline_time(compute_time / sustained_compute, memory_time / sustained_memory)
    return ideal, stretch * busy + communication_time


def on_the_roofs(work: Work, chip: Chip) -> tuple[Peak, float, float]:
    """The peak `work` runs at on `chip`, and its compute and memory times at the peaks.

    Its sparse FLOPs run at the chip's sparse rate, its wide ones at the `WIDE` matrix peak
    and the others at the dense peak; work of several (a step whose linear layers are sparse
    and whose attention is not, or whose linear layers are fp8 and whose attention is bf16)
    runs at their blend, its FLOPs over the sum of the compute times."""
    if not work.bytes > 0:
        raise InvalidInput("bytes", "must be > 0: every kernel reads or writes memory")
    if work.flops < 0:
        raise InvalidInput("flops", "must be >= 0")
    memory_time = work.bytes / chip.memory_bandwidth
    compute_time = 0.0
    if work.sparse_flops:  # asked first: a chip without the sparse rate is refused on it
        sparse = chip.sparse_peak(work.dtype)
        if work.sparse_flops == work.flops:
            return sparse, work.flops / sparse.flops_per_s, memory_time
        compute_time += work.sparse_flops / sparse.flops_per_s
    if work.wide_flops:
        compute_time += work.wide_flops / chip.peak(WIDE, work.unit).flops_per_s
    dense = chip.peak(work.dtype, work.unit)
    rest = work.flops - work.sparse_flops - work.wide_flops
    compute_time += rest / dense.flops_per_s
    if rest == work.flops or not compute_time:  # all at the dense peak, or too few to time
        return dense, compute_time, memory_time
    return blend(dense, work.flops, compute_time), compute_time, memory_time


def blend(peak: Peak, flops: float, compute_time: float) -> Peak:
    """The rate `flops` FLOPs run at together when they take `compute_time` at their own
    peaks (of `peak`'s dtype and unit): the step's peak, its FLOPs over its compute time."""
    return Peak(flops / compute_time, peak.dtype, peak.unit)


def sparse_share(work: Work, chip: Chip, compute_time: float) -> float:
    """The share of `work`'s compute time spent at the sparse rate."""
    if not work.sparse_flops:
        return 0.0
    return work.sparse_flops / chip.sparse_peak(work.dtype).flops_per_s / compute_time


def place(
    work: Work,
    chip: Chip,
    communication_time: float = 0.0,
    stretch: float = 1.0,
) -> Roofline:
    """Place `work` on `chip`'s roofline.

    `communication_time` (tensor-parallel collectives) sits on the critical path between
    layers, so it adds to the roofline time rather than overlapping it. `stretch` >= 1 scales
    the busy time for idle slots the schedule imposes (a pipeline's bubble).
    """
    peak, compute_time, memory_time = on_the_roofs(work, chip)
    # The catalog holds measured fractions for matrix work and for memory traffic only;
    # vector work is memory-bound on every catalogued chip, so its compute term keeps the peak.
    # best-shape kernels reach the chip's measured fraction; a GEMM that cannot fill the
    # chip's compute units reaches that share of it (app/engine/tiling.py)
    sustained_compute = (
        chip.sustained_matrix_of(peak.dtype) * fill(work.tiles, work.tile_fill, chip.compute_units)
        if peak.unit is Unit.MATRIX
        else 1.0
    )
    if work.warp and peak.unit is Unit.MATRIX:
        sustained_compute = chip.warp_sustained(sustained_compute)
    if work.sparse_flops:
        # sparse kernels reach SPARSE_SPEEDUP / 2 of the dense kernels' share of their peak:
        # over the compute time, a share x of it sparse, the sustained one is
        # f / ((1 - x) + x 2 / SPARSE_SPEEDUP) (f SPARSE_SPEEDUP / 2 when all of it is)
        x = sparse_share(work, chip, compute_time)
        sustained_compute /= 1 - x + x * 2 / SPARSE_SPEEDUP
    expected, realistic = critical_path(
        compute_time,
        memory_time,
        communication_time,
        (sustained_compute, chip.sustained_memory),
        stretch,
    )
    result = Roofline(
        flops=work.flops,
        bytes=work.bytes,
        peak=peak,
        memory_bandwidth=chip.memory_bandwidth,
        compute_time=compute_time,
        memory_time=memory_time,
        communication_time=communication_time,
        expected_time=expected,
        realistic_time=realistic,
        sustained_compute=sustained_compute,
        sustained_memory=chip.sustained_memory,
        sustained_time=realistic,
        realistic_low=realistic,
        realistic_high=realistic,
    )
    if not math.isfinite(result.expected_time + result.arithmetic_intensity):
        raise InvalidInput("workload", "the work is too large to represent (overflow)")
    return result
