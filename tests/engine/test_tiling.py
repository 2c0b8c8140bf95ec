"""Tile and wave quantisation of a GEMM (app/engine/tiling.py), by hand."""

from dataclasses import replace

import pytest

from app.engine import Dtype, custom, matmul, place
from app.engine.tiling import fill, output_tiles
from tests.engine.chips import A100, H100


def test_the_guides_example_fills_98_of_108_sms():
    # NVIDIA's guide: a 1792 x 1792 output in 256 x 128 tiles is 7 x 14 = 98 tiles, one wave
    # on an A100's 108 SMs: 98 / 108 = 90.7% busy
    assert output_tiles(1792, 1792) == (98, 1.0)
    assert fill(98, 1.0, 108) == pytest.approx(98 / 108)


def test_waves_and_padding():
    # 1024 x 1024: 4 x 8 = 32 tiles, a quarter of an H100's 132 SMs: 32 / 132 = 24.2%
    assert fill(*output_tiles(1024, 1024), 132) == pytest.approx(32 / 132)
    # 4096 x 4096: 16 x 32 = 512 tiles in ceil(512 / 132) = 4 waves: 512 / 528 = 97.0%
    assert fill(*output_tiles(4096, 4096), 132) == pytest.approx(512 / 528)
    # 257 x 128: 2 x 1 tiles, half of them padding: 257 * 128 / (2 * 256 * 128) = 0.502
    tiles, tile_fill = output_tiles(257, 128)
    assert tiles == 2
    assert tile_fill == pytest.approx(257 / 512)
    # unknown units, or work that is not one GEMM: no loss
    assert fill(32, 1.0, None) == fill(0, 1.0, 132) == 1.0


def test_a_small_gemm_cannot_fill_the_chip_but_its_ideal_is_unchanged():
    h100 = replace(H100, compute_units=132)
    work = matmul(1024, 1024, 1024, Dtype.BF16)
    small, unknown = place(work, h100), place(work, H100)
    # the ideal is the peak's: 2 x 1024^3 / 989.4e12 = 2.17 us whatever the units
    assert small.expected_time == unknown.expected_time
    # sustained: the catalog's fraction times 32 / 132 of the SMs
    assert small.sustained_compute == pytest.approx(H100.sustained_matrix * 32 / 132)
    assert small.realistic_time > unknown.realistic_time
    # only single GEMMs are tiled: custom matrix work keeps the chip's fraction
    other = place(custom(2.0 * 1024**3, 6 * 1024**2, Dtype.BF16, work.unit), h100)
    assert other.sustained_compute == H100.sustained_matrix
    # a big GEMM on an A100 of 108 SMs: 8192 x 8192 is 32 x 64 = 2048 tiles in 19 waves,
    # 2048 / 2052 = 99.8%
    a100 = replace(A100, compute_units=108)
    big = place(matmul(8192, 8192, 8192, Dtype.BF16), a100)
    assert big.sustained_compute == pytest.approx(A100.sustained_matrix * 2048 / 2052)
