"""A trace's copies between host and device memory, priced as copies are (copies.py;
docs/formulas.md#traces).

A profiler trace does not record which device a tensor is on, so an `aten::copy_` or
`aten::_to_copy` event alone does not say whether it crossed the host link. Its device events
do: Kineto names each CUDA memcpy by its kind and its two memories, "Memcpy HtoD (Pageable ->
Device)", and gives the bytes it moved (`args["bytes"]`). A copy from or to host memory
(HtoD, DtoH) is priced on the host link by `place_copy`, from pinned memory where either end
is "Pinned", else pageable; a copy within device memory (DtoD) or between devices (PtoP) is
device work, counted with the kernels of the operator that launched it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from app.engine.copies import Direction, place_copy, share_line
from app.engine.errors import Unsupported
from app.engine.hardware import Chip
from app.engine.roofline import Roofline
from app.engine.trace_events import US, Device

# Kineto's memcpy name: "Memcpy <kind> (<source memory> -> <destination memory>)", the kind
# and memories as CUPTI names them (CUpti_ActivityMemcpyKind, CUpti_ActivityMemoryKind)
_MEMCPY = re.compile(r"Memcpy (\w+) \(([\w ]+) -> ([\w ]+)\)")
_DIRECTIONS = {"HtoD": Direction.H2D, "DtoH": Direction.D2H}


def host_copy_of(event: Device) -> tuple[Direction, bool] | None:
    """(direction, pinned) of a memcpy between host and device memory; None for any other
    device event."""
    if event.category != "gpu_memcpy":
        return None
    found = _MEMCPY.fullmatch(event.name)
    if found is None or found[1] not in _DIRECTIONS:
        return None
    return _DIRECTIONS[found[1]], "Pinned" in (found[2], found[3])


@dataclass(slots=True)
class HostCopy:
    """The copies of one direction, memory and size: `roofline` one copy's on the chip
    (None when the trace gives no bytes or the chip has no host link figure)."""

    direction: Direction
    pinned: bool
    bytes: float | None  # one copy's
    count: int = 0
    measured: float = 0.0  # seconds, all of them
    launchers: set[str] = field(default_factory=set)  # the operators that launched them
    roofline: Roofline | None = None

    @property
    def expected_time(self) -> float:
        """All of them at the host link's full rate (0 when not priced)."""
        return 0.0 if self.roofline is None else self.count * self.roofline.expected_time

    @property
    def realistic_time(self) -> float:
        """All of them at the rate copies reach from their memory (0 when not priced)."""
        return 0.0 if self.roofline is None else self.count * self.roofline.realistic_time

    @property
    def where(self) -> str:
        """The copies as the share line names them."""
        memory = "pinned" if self.pinned else "pageable"
        by = ", ".join(sorted(self.launchers)) or "no operator in the trace"
        return f"{self.count} {self.direction} from {memory} memory, launched by {by}"


@dataclass(frozen=True, slots=True)
class HostCopies:
    """A trace's host copies, by size, most measured time first."""

    groups: tuple[HostCopy, ...]
    unpriced: str  # why some are not priced ("" when all are)

    @property
    def measured(self) -> float:
        return sum(g.measured for g in self.groups)

    @property
    def expected_time(self) -> float:
        return sum(g.expected_time for g in self.groups)

    def share_line(self, measured: float) -> str:
        """What share of `measured` seconds the priced copies take at best (copies.py)."""
        priced = [g for g in self.groups if g.roofline is not None]
        if not priced or measured <= 0:
            return ""
        where = "; ".join(g.where for g in priced)
        return share_line(self.expected_time, measured, where)


def host_copies(copies: Iterable[tuple[Device, str | None]], chip: Chip) -> HostCopies | None:
    """The host copies among `copies` (each device event with the name of the operator that
    launched it), grouped and priced on `chip`; None when there are none."""
    groups: dict[tuple[Direction, bool, float | None], HostCopy] = {}
    for event, launcher in copies:
        kind = host_copy_of(event)
        if kind is None:
            continue
        group = groups.setdefault((*kind, event.bytes), HostCopy(*kind, event.bytes))
        group.count += 1
        group.measured += event.dur * US
        if launcher is not None:
            group.launchers.add(launcher)
    if not groups:
        return None
    unpriced = ""
    for group in groups.values():
        if group.bytes is None:
            unpriced = "a memcpy event gives no bytes"
            continue
        try:
            group.roofline = place_copy(group.bytes, group.direction, chip, pinned=group.pinned)
        except Unsupported as error:
            unpriced = str(error.message)
    ordered = sorted(groups.values(), key=lambda g: g.measured, reverse=True)
    return HostCopies(tuple(ordered), unpriced)
