"""The cache roof (docs/formulas.md#the-cache-roof): a run whose working set fits in the chip's
last-level cache, timed back to back, reads it from the cache, not from memory.

A timed loop runs the same work on the same bytes each iteration. Where those bytes all fit in
the cache every compute unit shares in front of memory (NVIDIA's L2, AMD CDNA 3's Infinity
Cache, Gaudi's on-die SRAM), after the first iteration they come from the cache, so the memory
roof (bytes / memory bandwidth) no longer bounds the run: the cache roof does, bytes / cache
bandwidth, under the same compute roof (Williams, Waterman and Patterson's roofline with one
bandwidth ceiling per level of the hierarchy, as Ilic, Pratas and Sousa's cache-aware
roofline draws them, IEEE CAL 2014).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine import prose
from app.engine.hardware import Chip
from app.engine.roofline import Roofline, roofline_time

MIB = 2**20


@dataclass(frozen=True, slots=True)
class CacheRoof:
    """Work placed under a chip's last-level cache: its `working_set` (bytes) against the
    cache's `size_bytes`, and `time`, the least time (seconds) the work takes with every byte
    read at the cache's `bandwidth` (bytes/s): the compute roof alone where no bandwidth is
    catalogued."""

    name: str
    size_bytes: float
    bandwidth: float | None
    working_set: float
    time: float

    @property
    def fits(self) -> bool:
        """Whether the working set fits in the cache (a working set of exactly its size does)."""
        return self.working_set <= self.size_bytes


def cache_roof(roof: Roofline, chip: Chip) -> CacheRoof | None:
    """`roof`'s work under `chip`'s last-level cache; None where the catalog has no size for it.

    The working set is taken as the bytes the roofline moves: each distinct byte is moved at
    least once, so they bound it from above, and a working set said to fit does fit. The time
    is the roofline's with its memory term at the cache's bandwidth, and the same compute and
    communication terms."""
    if chip.cache_bytes is None:
        return None
    cache_time = 0.0 if chip.cache_bandwidth is None else roof.bytes / chip.cache_bandwidth
    time = roofline_time(roof.compute_time, cache_time) + roof.communication_time
    return CacheRoof(chip.cache_name, chip.cache_bytes, chip.cache_bandwidth, roof.bytes, time)


def cache_roof_time(roof: Roofline, chip: Chip) -> float | None:
    """The cache roof's time where it is a bandwidth roof of its own: `roof`'s working set
    fits in `chip`'s last-level cache and the cache's bandwidth is catalogued; None where the
    cache's size or bandwidth is unknown, or the working set does not fit."""
    cache = cache_roof(roof, chip)
    if cache is None or cache.bandwidth is None or not cache.fits:
        return None
    return cache.time


def cache_resident(roof: Roofline, chip: Chip | None, measured_time: float) -> CacheRoof | None:
    """The cache roof that explains a run faster than its (memory) roofline time: the run's
    working set fits in the cache and the run is not faster than the cache roof. None where
    the run is not faster than the roofline, or the cache does not explain it (no chip or no
    cache size known, a working set too large, or a run faster even than the cache allows)."""
    if chip is None or measured_time >= roof.expected_time:
        return None
    cache = cache_roof(roof, chip)
    if cache is None or not cache.fits or measured_time < cache.time:
        return None
    return cache


def cache_advice(cache: CacheRoof, roof: Roofline, measured_time: float) -> tuple[str, ...]:
    """What a cache-resident run's verdict says, with its numbers."""
    achieved = roof.bytes / measured_time
    size = f"{prose.number(cache.size_bytes / MIB)} MiB {cache.name}"
    if cache.bandwidth is None:
        bound = (
            f"No {cache.name} bandwidth is catalogued for this chip, so the only floor left "
            f"is the compute roof, {prose.seconds(cache.time)}."
        )
    else:
        bound = (
            f"The {cache.name} roof ({prose.number(cache.bandwidth / 1e12)} TB/s) allows "
            f"{prose.seconds(cache.time)}; measured {prose.times(measured_time / cache.time)} that."
        )
    return (
        f"Cache-resident: the working set ({prose.number(cache.working_set / MIB)} MiB) fits in "
        f"the {size}, so timed back to back it is read from the cache at "
        f"{prose.number(achieved / 1e12)} TB/s, {prose.times(achieved / roof.memory_bandwidth)} "
        f"the memory bandwidth ({prose.number(roof.memory_bandwidth / 1e12)} TB/s). Faster than "
        "the memory roofline, and not a timing error.",
        bound,
        "In real use the bytes are rarely still in the cache (other work evicts them, or the "
        "data is new each time): to time that, flush the cache between iterations or use a "
        "working set larger than it.",
    )
