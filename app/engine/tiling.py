"""How a GEMM's output tiles fill the chip (docs/formulas.md#realistic-time).

A GPU computes C = A B as tiles of C, one per thread block, in waves of one tile per compute
unit (SM or CU). Two losses follow (NVIDIA, "Matrix Multiplication Background User's Guide",
"Dimension Quantization Effects",
https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/index.html):
tile quantisation, when m or n is not a multiple of the tile and the last tiles compute
padding; and wave quantisation, when the tiles do not fill the last wave. Libraries now
rebalance a partial last wave across the chip when there are several (stream-K, Osama et al.
2023, https://arxiv.org/abs/2301.03598, in CUTLASS and cuBLAS), so the wave loss that remains
is the one no split can hide: fewer tiles than units. Tiles are 128 x 128, CUTLASS's
threadblock tile for tensor-core GEMMs
(https://github.com/NVIDIA/cutlass/blob/main/media/docs/efficient_gemm.md): a 1024 x 1024
output is 64 tiles, under half of an H100's 132 SMs.
"""

from __future__ import annotations

import math

TILE = (128, 128)  # output rows x columns of one thread block's tile


def output_tiles(m: int, n: int) -> tuple[int, float]:
    """The tiles an m x n output is cut into, and the share of their elements that is output
    rather than padding (tile quantisation)."""
    rows, cols = math.ceil(m / TILE[0]), math.ceil(n / TILE[1])
    tiles = rows * cols
    return tiles, m * n / (tiles * TILE[0] * TILE[1])


def fill(tiles: int, tile_fill: float, units: int | None) -> float:
    """The share of the chip's compute a GEMM of `tiles` tiles keeps busy: the tiles' own
    fill, times the share of units a single partial wave occupies (several waves are
    rebalanced); 1 when the units are unknown or the work is not one GEMM (`tiles` 0)."""
    if not tiles or not units:
        return 1.0
    return tile_fill * min(1.0, tiles / units)
