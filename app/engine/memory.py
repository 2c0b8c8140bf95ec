"""Memory footprint per chip in inference (docs/formulas.md#memory); training's is in
training.py."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from app.engine.architecture import Architecture
from app.engine.transformer import Precision, kv_cache_bytes, kv_shards, weight_bytes
from app.engine.units import dtype_bytes

# Logits are materialised in fp32 for sampling and for the loss (HF and vLLM upcast them).
LOGIT_BYTES = 4.0


@dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """Bytes needed per chip, by what holds them."""

    weights: float = 0.0
    kv_cache: float = 0.0
    activations: float = 0.0
    gradients: float = 0.0
    optimizer: float = 0.0
    reserve: float = 0.0

    @property
    def total(self) -> float:
        """Everything together."""
        return (
            self.weights
            + self.kv_cache
            + self.activations
            + self.gradients
            + self.optimizer
            + self.reserve
        )

    def fits_in(self, capacity: float) -> bool:
        """Whether it all fits in `capacity` bytes per chip."""
        return self.total <= capacity


def _mlp_width(arch: Architecture) -> int:
    """Widest MLP hidden activation per token (MoE: k experts plus the shared ones)."""
    width = arch.mlp.intermediate if arch.dense_layers else 0
    if arch.moe is not None:
        moe_width = arch.moe.experts_per_token * arch.moe.expert.intermediate
        moe_width += arch.moe.shared.intermediate if arch.moe.shared else 0
        width = max(width, moe_width)
    return width


def inference_memory(
    arch: Architecture,
    *,
    batch: float,
    context: float,
    step_tokens: float,
    precision: Precision,
    tp: int,
    reserve: float,
) -> MemoryBreakdown:
    """Weights + KV cache for `context` tokens + one layer's activation workspace + reserve.

    Workspace: the residual and normed hidden states (2 d) and the MLP's gate and up outputs
    (2 F) for the `step_tokens` processed at once per sequence, plus fp32 logits of the last
    position (B V 4 bytes); attention scores are not materialised (flash attention).
    """
    s_c = dtype_bytes(precision.compute)
    workspace = batch * step_tokens * (2 * arch.hidden + 2 * _mlp_width(arch)) * s_c
    workspace += batch * arch.vocab * LOGIT_BYTES
    whole = MemoryBreakdown(
        weights=weight_bytes(arch, precision),
        kv_cache=kv_cache_bytes(arch, precision.kv, batch, context),
        activations=workspace,
        reserve=reserve,
    )
    return tensor_parallel_share(whole, arch, tp)


def tensor_parallel_share(whole: MemoryBreakdown, arch: Architecture, tp: int) -> MemoryBreakdown:
    """One chip's share of an inference footprint over `tp` chips: weights and workspace split
    tp ways, the KV cache over `kv_shards`, the reserve per chip. `whole` is the footprint at
    tp = 1 (x / 1 is x), so sharing it again at any tp is what `inference_memory` gives there."""
    return MemoryBreakdown(
        weights=whole.weights / tp,
        kv_cache=whole.kv_cache / kv_shards(arch, tp),
        activations=whole.activations / tp,
        reserve=whole.reserve,
    )


# the closed form decides alone where the room for sequences is this far, relatively, from a
# whole number of them: far above the rounding of a sum of a few products (about 1e-15), far
# below a byte in the gigabytes a chip holds
_CLEAR = 1e-9


def largest_batch(memory_at: Callable[[float], MemoryBreakdown], capacity: float) -> int:
    """The largest batch whose memory fits in `capacity` (0 when not even batch 1 does).

    Memory is affine in the batch (weights and reserve fixed; KV cache and activations
    proportional), so the answer is closed-form: floor((capacity - fixed) / per_sequence),
    checked against `memory_at` at that batch and the next where the room is within _CLEAR
    of a whole number of sequences.
    """
    fixed = memory_at(0.0).total
    per_sequence = memory_at(1.0).total - fixed
    if fixed + per_sequence > capacity:
        return 0
    if per_sequence <= 0:
        raise ValueError("memory does not grow with the batch")
    room = (capacity - fixed) / per_sequence
    batch = math.floor(room)
    if min(room - batch, batch + 1 - room) > _CLEAR * room:
        return batch
    # guard the float division at the boundary
    while not memory_at(float(batch)).fits_in(capacity):
        batch -= 1
    while memory_at(float(batch + 1)).fits_in(capacity):
        batch += 1
    return batch
