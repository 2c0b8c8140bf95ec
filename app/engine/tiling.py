"""How a GEMM's output tiles fill the chip (docs/formulas.md#realistic-time).

A GPU computes C = A B as tiles of C, one per thread block, in waves of one tile per compute
unit (SM or CU). Two losses follow (NVIDIA, "Matrix Multiplication Background User's Guide",
"Dimension Quantization Effects",
https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/index.html):
tile quantisation, when m or n is not a multiple of the tile and the last tiles compute
padding; and wave quantisation, when the tiles do not fill the last wave. The guide's example
tile is 256 x 128 (on an A100's 108 SMs a 1792 x 1792 output is 7 x 14 = 98 tiles: one wave,
98 of 108 SMs busy). A large GEMM fills every wave, which is where the catalog's sustained
fractions were measured; a small or skinny one cannot: a 1024 x 1024 output is 32 tiles, a
quarter of an H100's 132 SMs.
"""

from __future__ import annotations

import math

TILE = (256, 128)  # output rows x columns of one thread block's tile (the guide's example)


def output_tiles(m: int, n: int) -> tuple[int, float]:
    """The tiles an m x n output is cut into, and the share of their elements that is output
    rather than padding (tile quantisation)."""
    rows, cols = math.ceil(m / TILE[0]), math.ceil(n / TILE[1])
    tiles = rows * cols
    return tiles, m * n / (tiles * TILE[0] * TILE[1])


def fill(tiles: int, tile_fill: float, units: int | None) -> float:
    """The share of the chip's compute a GEMM of `tiles` tiles keeps busy: its tiles over the
    unit-slots of the waves they need, times the tiles' own fill; 1 when the units are
    unknown or the work is not one GEMM (`tiles` 0)."""
    if not tiles or not units:
        return 1.0
    waves = math.ceil(tiles / units)
    return tile_fill * tiles / (waves * units)
