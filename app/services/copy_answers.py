"""A copy workload on a chip: its roofline, and the lines that explain it and say what it
assumed (docs/formulas.md#copies)."""

from __future__ import annotations

from app import formatting as fmt
from app.engine import Chip, Kind, Roofline, Software
from app.engine.copies import (
    Direction,
    exposed_time,
    host_link_per_direction,
    link_fraction,
    place_copy,
)
from app.schemas.copy_bodies import CopyWorkload
from app.services.work_advice import HostCopy

_WAYS = {Direction.H2D: "host to device", Direction.D2H: "device to host"}


def copy_roofline(workload: CopyWorkload, chip: Chip, stack: Software) -> tuple[Roofline, Kind]:
    """The copy's roofline on `chip`, and the kind of work its realistic time is of: a device
    copy is a pointwise kernel, a host copy the link's transfer."""
    roof = place_copy(
        workload.bytes, workload.direction, chip, pinned=workload.pinned, software=stack
    )
    return roof, Kind.ELEMENTWISE if workload.direction is Direction.D2D else Kind.COPY


def copy_facts(workload: CopyWorkload, chip: Chip) -> HostCopy | None:
    """What the advice names of a host copy (None for a device copy: a kernel's advice)."""
    if workload.direction is Direction.D2D:
        return None
    pinned = place_copy(workload.bytes, workload.direction, chip, pinned=True)
    return HostCopy(workload.pinned, pinned.realistic_time)


def copy_lines(workload: CopyWorkload, chip: Chip, roof: Roofline) -> list[str]:
    """How long the copy takes and why, and with `overlap_s` what the step still waits for."""
    size = fmt.bytes_(workload.bytes)
    if workload.direction is Direction.D2D:
        lines = [
            f"Device copy: {size} read and {size} written in device memory at "
            f"{fmt.rate(roof.memory_bandwidth, 'B/s')} takes {fmt.seconds(roof.memory_time)}.",
        ]
    else:
        link = host_link_per_direction(chip)
        memory = "pinned" if workload.pinned else "pageable"
        lines = [
            f"Link: {size} {_WAYS[workload.direction]} over one direction of the host link, "
            f"{fmt.rate(link, 'B/s')}, takes {fmt.seconds(roof.communication_time)}; the "
            f"device side ({fmt.seconds(roof.memory_time)} in device memory) runs meanwhile.",
            f"From {memory} host memory copies reach about "
            f"{fmt.percent(link_fraction(pinned=workload.pinned))} of the link: "
            f"{fmt.seconds(roof.realistic_time)}.",
        ]
        if not workload.pinned:
            pinned = place_copy(workload.bytes, workload.direction, chip, pinned=True)
            lines.append(
                "Pinned memory (tensor.pin_memory(), DataLoader(pin_memory=True)) would take "
                f"{fmt.seconds(pinned.realistic_time)}."
            )
    if workload.overlap_s is not None:
        exposed = exposed_time(roof.realistic_time, workload.overlap_s)
        lines.append(
            f"Beside {fmt.seconds(workload.overlap_s)} of compute on another stream, the step "
            f"still waits {fmt.seconds(exposed)} for the copy"
            + (": it is hidden." if exposed == 0 else ".")
        )
    return lines
