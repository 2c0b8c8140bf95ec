"""Tile and wave quantisation of a GEMM (app/engine/tiling.py), by hand."""

from dataclasses import replace

import pytest

from app.engine import Dtype, custom, matmul, place
from app.engine.tiling import fill, output_tiles
from tests.engine.chips import A100, H100


def test_fewer_tiles_than_units_leave_units_idle():
    # 1024 x 1024 in 128 x 128 tiles: 8 x 8 = 64 tiles on an H100's 132 SMs: 48.5% busy
    assert output_tiles(1024, 1024) == (64, 1.0)
    assert fill(64, 1.0, 132) == pytest.approx(64 / 132)
    # 4096 x 4096: 1024 tiles, 7.8 waves, rebalanced (stream-K): no wave loss
    assert fill(*output_tiles(4096, 4096), 132) == 1.0


def test_padding_of_the_last_tiles():
    # 129 x 128: 2 x 1 tiles, half of them padding: 129 * 128 / (2 * 128 * 128) = 0.504
    tiles, tile_fill = output_tiles(129, 128)
    assert tiles == 2
    assert tile_fill == pytest.approx(129 / 256)
    # and those 2 tiles on 108 SMs: 0.504 x 2 / 108
    assert fill(tiles, tile_fill, 108) == pytest.approx(129 / 256 * 2 / 108)
    # unknown units, or work that is not one GEMM: no loss
    assert fill(64, 1.0, None) == fill(0, 1.0, 132) == 1.0


def test_a_small_gemm_cannot_fill_the_chip_but_its_ideal_is_unchanged():
    h100 = replace(H100, compute_units=132)
    work = matmul(1024, 1024, 1024, Dtype.BF16)
    small, unknown = place(work, h100), place(work, H100)
    # the ideal is the peak's: 2 x 1024^3 / 989.4e12 = 2.17 us whatever the units
    assert small.expected_time == unknown.expected_time
    # sustained: the catalog's fraction times 64 / 132 of the SMs
    assert small.sustained_compute == pytest.approx(H100.sustained_matrix * 64 / 132)
    assert small.realistic_time > unknown.realistic_time
    # only single GEMMs are tiled: custom matrix work keeps the chip's fraction
    other = place(custom(2.0 * 1024**3, 6 * 1024**2, Dtype.BF16, work.unit), h100)
    assert other.sustained_compute == H100.sustained_matrix
    # a big GEMM on an A100 of 108 SMs fills it: 8192 x 8192 is 64 x 64 = 4096 tiles
    a100 = replace(A100, compute_units=108)
    big = place(matmul(8192, 8192, 8192, Dtype.BF16), a100)
    assert big.sustained_compute == A100.sustained_matrix
