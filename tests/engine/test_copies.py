"""Copies between host and device, and within device memory (docs/formulas.md#copies)."""

from dataclasses import replace

import pytest

from app.engine import Bound, InvalidInput, Unsupported
from app.engine.copies import (
    PAGEABLE_OVER_PINNED,
    PINNED_LINK_FRACTION,
    Direction,
    exposed_time,
    link_fraction,
    place_copy,
)
from tests.engine.chips import A100

# the A100's host link: PCIe Gen4 x16, 64 GB/s bidirectional, 32 GB/s each way
A100_PCIE4 = replace(A100, host_bandwidth=64e9)
GB = 1e9


def test_the_fractions_are_their_sources_figures():
    # CUDA Best Practices Guide: ~12 GB/s pinned of PCIe Gen3 x16's 16 GB/s per direction;
    # dask-cuda PR 98: pageable 5-6 GB/s against pinned 11-12 GB/s, the midpoints' ratio
    assert PINNED_LINK_FRACTION == 0.75
    assert pytest.approx(0.47826, rel=1e-4) == PAGEABLE_OVER_PINNED
    assert link_fraction(pinned=True) == 0.75
    # 0.75 x 5.5 / 11.5 = 0.35870
    assert link_fraction(pinned=False) == pytest.approx(0.35870, rel=1e-4)


def test_one_gigabyte_host_to_device_from_pinned_memory_on_an_a100():
    # link: 1e9 B / 32e9 B/s = 31.25 ms; device side: 1e9 / 2.039e12 = 0.49043 ms, meanwhile;
    # expected max(31.25, 0.49) = 31.25 ms; realistic at 75% of the link: 41.667 ms
    roof = place_copy(GB, Direction.H2D, A100_PCIE4, pinned=True)
    assert roof.communication_time == pytest.approx(31.25e-3)
    assert roof.memory_time == pytest.approx(0.49043e-3, rel=1e-4)
    assert roof.expected_time == pytest.approx(31.25e-3)
    assert roof.realistic_time == pytest.approx(41.667e-3, rel=1e-4)
    assert roof.flops == 0
    assert roof.bytes == GB
    assert roof.bound is Bound.COMMUNICATION


def test_pageable_memory_is_slower_than_pinned_by_the_measured_ratio():
    # 31.25 ms / 0.35870 = 87.121 ms (= 41.667 ms x 11.5 / 5.5)
    pageable = place_copy(GB, Direction.D2H, A100_PCIE4, pinned=False)
    pinned = place_copy(GB, Direction.D2H, A100_PCIE4, pinned=True)
    assert pageable.realistic_time == pytest.approx(87.121e-3, rel=1e-4)
    assert pageable.expected_time == pinned.expected_time  # the link's line rate either way
    assert pinned.realistic_time / pageable.realistic_time == pytest.approx(5.5 / 11.5)


def test_a_device_copy_reads_and_writes_device_memory():
    # 1 GB read + 1 GB written = 2e9 B at 2.039 TB/s: 0.98087 ms, memory-bound, no link
    roof = place_copy(GB, Direction.D2D, A100_PCIE4)
    assert roof.bytes == 2 * GB
    assert roof.expected_time == pytest.approx(0.98087e-3, rel=1e-4)
    assert roof.communication_time == 0
    assert roof.bound is Bound.MEMORY


def test_an_overlapped_copy_exposes_only_what_compute_does_not_hide():
    # 41.667 ms of copy beside 30 ms of compute: 11.667 ms exposed; beside 50 ms: none
    copy = place_copy(GB, Direction.H2D, A100_PCIE4, pinned=True).realistic_time
    assert exposed_time(copy, 30e-3) == pytest.approx(11.667e-3, rel=1e-3)
    assert exposed_time(copy, 50e-3) == 0


@pytest.mark.parametrize("size", [1.0, 4096.0, 1e6, 1e12])
@pytest.mark.parametrize("direction", [Direction.H2D, Direction.D2H])
def test_a_host_copy_is_never_faster_than_its_link_nor_pageable_than_pinned(size, direction):
    pinned = place_copy(size, direction, A100_PCIE4, pinned=True)
    pageable = place_copy(size, direction, A100_PCIE4, pinned=False)
    assert pinned.expected_time >= size / 32e9
    assert pinned.expected_time <= pinned.realistic_time < pageable.realistic_time


def test_a_chip_without_a_host_link_has_no_host_copy():
    with pytest.raises(Unsupported) as raised:
        place_copy(GB, Direction.H2D, A100)  # no host_bandwidth
    assert raised.value.field == "direction"
    assert place_copy(GB, Direction.D2D, A100).expected_time > 0


def test_bad_copies_name_their_field():
    with pytest.raises(InvalidInput) as raised:
        place_copy(0, Direction.H2D, A100_PCIE4)
    assert raised.value.field == "bytes"
    with pytest.raises(InvalidInput) as raised:
        place_copy(GB, Direction.D2D, A100_PCIE4, pinned=True)
    assert raised.value.field == "pinned"


def test_a_host_copy_has_the_range_of_its_sources_fractions():
    # 1 GB h2d on an A100: 31.25 ms over 32 GB/s; pageable at 6/16 to 5/16 of the link:
    # 31.25 / 0.375 = 83.33 ms to 31.25 / 0.3125 = 100 ms; pinned at 0.785 to 11/16:
    # 31.25 / 0.78531 = 39.79 ms to 31.25 / 0.6875 = 45.45 ms
    pageable = place_copy(1e9, Direction.H2D, A100_PCIE4)
    assert pageable.realistic_low == pytest.approx(83.333e-3, rel=1e-4)
    assert pageable.realistic_high == pytest.approx(100e-3, rel=1e-4)
    pinned = place_copy(1e9, Direction.H2D, A100_PCIE4, pinned=True)
    assert pinned.realistic_low == pytest.approx(39.793e-3, rel=1e-4)
    assert pinned.realistic_high == pytest.approx(45.455e-3, rel=1e-4)
    assert pinned.realistic_low <= pinned.realistic_time <= pinned.realistic_high
