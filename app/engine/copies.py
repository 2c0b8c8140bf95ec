"""Copies between host and device memory, and within device memory (docs/formulas.md#copies).

A host <-> device copy crosses the chip's host link (PCIe, or NVLink-C2C on GH200), one
direction of it: the catalog quotes the link's bidirectional total, so a copy has half. The
device side of the copy (a write for h2d, a read for d2h) runs on the memory roof at the same
time as the link transfer, so the ideal time is the longer of the two. A device-to-device
copy reads and writes each byte in device memory (`memcopy`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from enum import StrEnum

from app.engine import prose
from app.engine.errors import InvalidInput, Unsupported
from app.engine.hardware import Chip
from app.engine.kernels import memcopy
from app.engine.realism import place_kernel
from app.engine.roofline import Roofline, Work, place
from app.engine.stacks import Kind, Software
from app.engine.units import Dtype, Unit, ms_from_seconds

# The share of one direction of a PCIe link a copy reaches from pinned (page-locked) host
# memory: "on PCIe x16 Gen3 cards, pinned memory can attain roughly 12 GB/s transfer rates"
# of the link's 16 GB/s per direction (NVIDIA, CUDA C++ Best Practices Guide, "Pinned
# Memory", https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/index.html#pinned-memory).
# Agrees with nvbandwidth on an A100 SXM4 over PCIe Gen4 x16: 25.13 of 32 GB/s host to
# device = 0.785 (https://github.com/NVIDIA/nvbandwidth/issues/42).
PINNED_LINK_FRACTION = 12 / 16
# From pageable host memory the driver first copies into a pinned staging buffer
# (https://developer.nvidia.com/blog/how-optimize-data-transfers-cuda-cc/): "without pinned
# memory, I normally see transfers at 5-6 GB/s, and 11-12 GB/s with" (an NVIDIA RAPIDS
# engineer, https://github.com/rapidsai/dask-cuda/pull/98): 5.5 / 11.5 of the pinned rate,
# the midpoints of the two ranges.
PAGEABLE_OVER_PINNED = 5.5 / 11.5
# The spread of those shares, as the same sources give it (low, high): pinned from the 11 GB/s
# of the RAPIDS engineer's 11-12 to nvbandwidth's 0.785 on an A100; pageable the 5-6 GB/s
# of the same 16 GB/s.
LINK_FRACTION_SPREAD = {True: (11 / 16, 25.13 / 32), False: (5 / 16, 6 / 16)}


class Direction(StrEnum):
    """Which way a copy goes: host to device, device to host, or within device memory."""

    H2D = "h2d"
    D2H = "d2h"
    D2D = "d2d"


def link_fraction(*, pinned: bool) -> float:
    """The share of one direction of the host link a copy reaches: pinned, or pageable."""
    return PINNED_LINK_FRACTION * (1.0 if pinned else PAGEABLE_OVER_PINNED)


def host_link_per_direction(chip: Chip) -> float:
    """One direction of the chip's host link, in bytes/s; Unsupported where it has none."""
    if chip.host_bandwidth is None:
        raise Unsupported(
            "direction",
            f"{chip.id} has no host link figure in the catalog (its memory is the host's, or "
            "the link is not published); use direction=d2d",
        )
    return chip.host_bandwidth / 2


def place_copy(
    bytes_copied: float,
    direction: Direction,
    chip: Chip,
    *,
    pinned: bool = False,
    software: Software = Software.TYPICAL,
) -> Roofline:
    """A copy of `bytes_copied` bytes on `chip`.

    d2d: read and write in device memory, as a copy kernel (`memcopy`, 2x the bytes). h2d and
    d2h: the link's time in `communication_time`; the expected time is max(device-memory
    time, link time), the realistic one max(the sustained memory time, the link time at
    `link_fraction`), and its range at the spread of that fraction.
    """
    if not bytes_copied > 0:
        raise InvalidInput("bytes", f"must be > 0, got {bytes_copied}")
    if direction is Direction.D2D:
        if pinned:
            raise InvalidInput("pinned", "applies to host memory: a d2d copy has none")
        return place_kernel(memcopy(bytes_copied), chip, software)
    link = host_link_per_direction(chip)
    # the device side: h2d writes each byte once, d2h reads it once
    device = place(Work(0.0, bytes_copied, Dtype.FP32, Unit.VECTOR, Kind.COPY), chip)
    link_time = bytes_copied / link
    realistic = max(device.realistic_time, link_time / link_fraction(pinned=pinned))
    slowest, fastest = LINK_FRACTION_SPREAD[pinned]
    return replace(
        device,
        communication_time=link_time,
        expected_time=max(device.memory_time, link_time),
        realistic_time=realistic,
        sustained_time=realistic,
        realistic_low=max(device.realistic_time, link_time / fastest),
        realistic_high=max(device.realistic_time, link_time / slowest),
    )


def exposed_time(copy_time: float, overlap_s: float) -> float:
    """What a step still waits for of a copy of `copy_time` seconds run on its own stream
    beside `overlap_s` seconds of compute: max(0, copy - compute)."""
    return max(0.0, copy_time - overlap_s)


def then_copies(kernels: Roofline | None, copies: Sequence[Roofline]) -> Roofline:
    """Realized kernels, then host copies (`place_copy`), one after another: every term and
    time adds; the copies' link times are the whole's communication term. A copy launches no
    kernel of its own and fuses with none (the copy engine moves it)."""
    parts = [*([] if kernels is None else [kernels]), *copies]
    realistic = sum(r.realistic_time for r in parts)
    return replace(
        parts[0],
        flops=sum(r.flops for r in parts),
        bytes=sum(r.bytes for r in parts),
        compute_time=sum(r.compute_time for r in parts),
        memory_time=sum(r.memory_time for r in parts),
        communication_time=sum(r.communication_time for r in parts),
        expected_time=sum(r.expected_time for r in parts),
        realistic_time=realistic,
        sustained_time=sum(r.sustained_time for r in parts),
        realistic_low=sum(r.realistic_low for r in parts),
        realistic_high=sum(r.realistic_high for r in parts),
        overhead_time=sum(r.overhead_time for r in parts),
        kernels=sum(r.kernels for r in parts),
    )


def share_line(copy_time: float, measured: float, where: str) -> str:
    """What share of `measured` seconds host copies of `copy_time` ideal seconds take at
    best, and where they are."""
    ideal = prose.number(ms_from_seconds(copy_time), 4)
    return (
        f"The host <-> device copies ({where}) take at least {copy_time / measured:.0%} of the "
        f"measured time: {ideal} ms at the host link's full rate; keep the data on the device, "
        "or copy from pinned memory beside compute."
    )
