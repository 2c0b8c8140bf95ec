"""Does a workload fit in memory: how much it needs, the largest batch, the fewest chips."""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.engine.architecture import Architecture
from app.engine.hardware import Chip
from app.engine.memory import MemoryBreakdown, largest_batch
from app.engine.workload import MAX_BATCH, TransformerSpec, estimate, memory_needed


@dataclass(frozen=True, slots=True)
class MemoryFit:
    """Memory per chip of a workload against the chip's capacity."""

    breakdown: MemoryBreakdown
    capacity: float
    max_batch: int  # at this tp; 0 when not even batch 1 fits
    min_chips: int | None  # fewest tensor-parallel chips at this batch; None if none fits

    @property
    def fits(self) -> bool:
        """Whether the workload fits as given."""
        return self.breakdown.total <= self.capacity


def tensor_parallel_degrees(arch: Architecture) -> list[int]:
    """Tensor-parallel degrees Megatron-style sharding allows: the divisors of the head count."""
    heads = arch.attention.heads
    return [p for p in range(1, heads + 1) if heads % p == 0]


def memory_fit(arch: Architecture, chip: Chip, spec: TransformerSpec) -> MemoryFit:
    """Memory needed per chip, the largest batch that fits, and the fewest chips that hold it.

    Memory per chip only falls as tp grows, so the fewest chips is the first degree that fits.
    """
    estimate(arch, chip, spec)  # validates the spec
    breakdown = memory_needed(arch, chip, spec, spec.batch)
    max_batch = min(
        largest_batch(lambda b: memory_needed(arch, chip, spec, b), chip.memory_bytes), MAX_BATCH
    )
    min_chips = next(
        (
            p
            for p in tensor_parallel_degrees(arch)
            if memory_needed(arch, chip, replace(spec, tp=p), spec.batch).total <= chip.memory_bytes
        ),
        None,
    )
    return MemoryFit(breakdown, chip.memory_bytes, max_batch, min_chips)
