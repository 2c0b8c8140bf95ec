"""Memory footprint per chip (MODELLING.md, "Inference memory" and "training step")."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from app.engine.architecture import Architecture, param_counts
from app.engine.transformer import Precision, kv_cache_bytes, kv_shards, weight_bytes
from app.engine.units import Dtype, dtype_bytes

# Logits are materialised in fp32 for sampling and for the loss (HF and vLLM upcast them).
LOGIT_BYTES = 4.0
# Adam keeps two fp32 moments per parameter (Kingma and Ba 2015).
ADAM_MOMENT_BYTES = 8.0
# Mixed-precision training keeps an fp32 master copy of 16-bit weights (Micikevicius et al. 2018).
MASTER_WEIGHT_BYTES = 4.0
# Korthikanti et al. 2022 ("Reducing activation recomputation in large transformer models",
# Table 2) count activations in 16-bit elements.
_KORTHIKANTI_BYTES = 2.0


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
    return MemoryBreakdown(
        weights=weight_bytes(arch, precision) / tp,
        kv_cache=kv_cache_bytes(arch, precision.kv, batch, context) / kv_shards(arch, tp),
        activations=workspace / tp,
        reserve=reserve,
    )


def training_state_bytes(dtype: Dtype) -> tuple[float, float, float]:
    """(weights, gradients, optimizer) bytes per parameter for AdamW.

    16-bit training: 2 + 2 + (4 master + 4 + 4) = 16 bytes; fp32 training: 4 + 4 + 8 = 16.
    """
    s = dtype_bytes(dtype)
    optimizer = ADAM_MOMENT_BYTES + (MASTER_WEIGHT_BYTES if s < MASTER_WEIGHT_BYTES else 0.0)
    return s, s, optimizer


def optimizer_traffic_per_param(dtype: Dtype) -> float:
    """Bytes per parameter an optimizer step moves besides the forward/backward weight reads.

    Gradients written then read (2 g), AdamW state read and written (2 o), and the weights
    updated: with an fp32 master copy (inside o) only the 16-bit copy is written (w); in fp32
    training the weights themselves are read and written (2 w). 16-bit: 4 + 24 + 2 = 30 bytes.
    """
    w, g, o = training_state_bytes(dtype)
    has_master = o > ADAM_MOMENT_BYTES
    return 2 * g + 2 * o + (w if has_master else 2 * w)


def training_activation_bytes(
    arch: Architecture,
    *,
    batch: float,
    seq_len: float,
    dtype: Dtype,
    tp: int,
    flash_attention: bool,
    recompute: bool,
) -> float:
    """Activations saved for the backward pass, per chip (Korthikanti et al. 2022, Table 2).

    Per layer: S B d (10 + 24/t + 5 H S / (d t)) bytes with tensor parallelism t; flash
    attention stores no S x S scores, dropping the last term; full recomputation keeps only
    each layer's input, 2 S B d. Scaled from 16-bit to `dtype`; plus fp32 logits B S V 4 / t.
    """
    sbd = seq_len * batch * arch.hidden
    if recompute:
        per_layer = 2.0 * sbd
    else:
        per_layer = sbd * (10 + 24 / tp)
        if not flash_attention:
            per_layer += sbd * 5 * arch.attention.heads * seq_len / (arch.hidden * tp)
    scale = dtype_bytes(dtype) / _KORTHIKANTI_BYTES
    return arch.layers * per_layer * scale + batch * seq_len * arch.vocab * LOGIT_BYTES / tp


def training_memory(
    arch: Architecture,
    *,
    batch: float,
    seq_len: float,
    dtype: Dtype,
    tp: int,
    flash_attention: bool,
    recompute: bool,
    reserve: float,
) -> MemoryBreakdown:
    """Weights, gradients and AdamW state split over tp chips, plus saved activations."""
    params = param_counts(arch).total / tp
    w, g, o = training_state_bytes(dtype)
    return MemoryBreakdown(
        weights=params * w,
        gradients=params * g,
        optimizer=params * o,
        activations=training_activation_bytes(
            arch,
            batch=batch,
            seq_len=seq_len,
            dtype=dtype,
            tp=tp,
            flash_attention=flash_attention,
            recompute=recompute,
        ),
        reserve=reserve,
    )


def largest_batch(memory_at: Callable[[float], MemoryBreakdown], capacity: float) -> int:
    """The largest batch whose memory fits in `capacity` (0 when not even batch 1 does).

    Memory is affine in the batch (weights and reserve fixed; KV cache and activations
    proportional), so the answer is closed-form: floor((capacity - fixed) / per_sequence).
    """
    fixed = memory_at(0.0).total
    per_sequence = memory_at(1.0).total - fixed
    if fixed + per_sequence > capacity:
        return 0
    if per_sequence <= 0:
        raise ValueError("memory does not grow with the batch")
    batch = math.floor((capacity - fixed) / per_sequence)
    # guard the float division at the boundary
    while memory_at(float(batch)).total > capacity:
        batch -= 1
    while memory_at(float(batch + 1)).total <= capacity:
        batch += 1
    return batch
