"""Communication between chips (docs/formulas.md#several-chips).

Bandwidth terms only: per-message latency is left out, so these are floors like the roofline
(the realistic time adds it: app/engine/realism.py).
"""

from __future__ import annotations

from app.engine.architecture import Architecture
from app.engine.hardware import Chip
from app.engine.units import Dtype, dtype_bytes


def ring_allreduce_bytes(size: float, chips: int) -> float:
    """Bytes each chip sends (and receives) in a ring all-reduce of `size` bytes: 2 (p-1)/p size.

    A reduce-scatter then an all-gather, each moving (p-1)/p of the data per chip
    (Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms", JPDC 2009).
    """
    return 2.0 * (chips - 1) / chips * size


def activation_dtype(compute: Dtype) -> Dtype:
    """The dtype activations cross chips in: 8-bit (and 4-bit) models run only their GEMMs in
    the narrow type and keep activations, and so their all-reduces, in bf16 (NVIDIA
    Transformer Engine's FP8 recipe: "the output of the GEMM is in higher precision",
    https://docs.nvidia.com/deeplearning/transformer-engine/user-guide/examples/fp8_primer.html)."""
    return Dtype.BF16 if dtype_bytes(compute) < dtype_bytes(Dtype.BF16) else compute


def tensor_parallel_time(
    arch: Architecture,
    chip: Chip,
    *,
    tokens: float,
    dtype: Dtype,
    tp: int,
    allreduces_per_layer: int,
) -> float:
    """Seconds of tensor-parallel all-reduces of the activations (tokens x d) per pass.

    Megatron-LM (Shoeybi et al. 2019) all-reduces twice per layer in the forward pass (after
    attention and after the MLP) and twice more in the backward pass. Each chip sends over one
    direction of its scale-up link.
    """
    if tp == 1:
        return 0.0
    size = tokens * arch.hidden * dtype_bytes(activation_dtype(dtype))
    per_layer = allreduces_per_layer * ring_allreduce_bytes(size, tp)
    return arch.layers * per_layer / chip.link_bandwidth_per_direction()
