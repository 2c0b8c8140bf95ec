"""Memory per chip in training: parameters stored and trained, optimizer state (ZeRO-sharded)
and the activations saved for the backward pass (docs/formulas.md, "Training")."""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.architecture import Architecture, param_counts
from app.engine.errors import InvalidInput
from app.engine.memory import LOGIT_BYTES, MemoryBreakdown
from app.engine.training.layout import Layout
from app.engine.training.options import (
    OPTIMIZER_STATE_BYTES,
    Lora,
    LoraTarget,
    Optimizer,
    Training,
)
from app.engine.units import Dtype, dtype_bytes

# Mixed-precision training keeps an fp32 master copy of 16-bit weights (Micikevicius et al. 2018).
MASTER_WEIGHT_BYTES = 4.0
# Korthikanti et al. 2022 ("Reducing activation recomputation in large transformer models",
# Table 2) count activations in 16-bit elements.
_KORTHIKANTI_BYTES = 2.0
# QLoRA's NF4 with double quantisation: 4 bits + 8-bit constants per 64 weights + fp32
# constants per 256 of those = 4 + 8/64 + 32/(64*256) = 4.127 bits (Dettmers et al. 2023, 3).
NF4_BYTES = 4.127 / 8


@dataclass(frozen=True, slots=True)
class Trainable:
    """Parameters per chip: those stored (the whole model's share) and those trained."""

    dense: float  # all parameters except routed experts, this chip's share
    expert: float  # routed expert parameters, this chip's share
    trained_dense: float
    trained_expert: float
    base_bytes: float  # bytes of the stored weights on this chip (frozen base for LoRA)

    @property
    def stored(self) -> float:
        """Parameters held on this chip."""
        return self.dense + self.expert

    @property
    def trained(self) -> float:
        """Parameters this chip trains."""
        return self.trained_dense + self.trained_expert


def lora_params(arch: Architecture, lora: Lora) -> tuple[float, float]:
    """(dense, routed-expert) adapter parameters: r (in + out) per adapted matrix (Hu et al.)."""
    if lora.rank < 1:
        raise InvalidInput("lora_rank", f"must be >= 1, got {lora.rank}")
    att = arch.attention
    d = arch.hidden
    targets = set(lora.targets)
    attention_targets = targets & {LoraTarget.Q, LoraTarget.K, LoraTarget.V, LoraTarget.O}
    if att.mla is not None and attention_targets:
        raise InvalidInput(
            "lora_targets",
            "MLA attention (DeepSeek) has no q/k/v/o projections: adapt gate, up, down",
        )
    q, kv = att.heads * att.head_dim, att.kv_heads * att.head_dim
    shapes = {
        LoraTarget.Q: (d, q),
        LoraTarget.K: (d, kv),
        LoraTarget.V: (d, kv),
        LoraTarget.O: (q, d),
    }
    per_layer_attention = sum(i + o for t, (i, o) in shapes.items() if t in targets)

    def mlp(intermediate: int, gated: bool) -> int:
        widths = {LoraTarget.UP: d + intermediate, LoraTarget.DOWN: intermediate + d}
        if gated:
            widths[LoraTarget.GATE] = d + intermediate
        return sum(w for t, w in widths.items() if t in targets)

    dense = arch.layers * per_layer_attention + arch.dense_layers * mlp(
        arch.mlp.intermediate, arch.mlp.gated
    )
    expert = 0
    if arch.moe is not None:
        moe = arch.moe
        if moe.shared is not None:
            dense += moe.moe_layers * mlp(moe.shared.intermediate, moe.shared.gated)
        expert = moe.moe_layers * moe.experts * mlp(moe.expert.intermediate, moe.expert.gated)
    return lora.rank * dense, lora.rank * expert


def trainable(arch: Architecture, dtype: Dtype, lay: Layout, lora: Lora | None) -> Trainable:
    """This chip's share of the stored and the trained parameters.

    Everything is split tp ways and over the pp stages, the fullest holding ceil(L/p)/L of it
    (1/p when p divides L); routed experts also ep ways. LoRA trains only adapters
    and stores the base in `dtype`, or its block matrices in NF4 for QLoRA.
    """
    c = param_counts(arch)
    shard = lay.tp * lay.pipeline_split  # the fullest stage's ceil(L/p) of the L layers
    dense, expert = (c.total - c.routed_total) / shard, c.routed_total / (shard * lay.ep)
    s = dtype_bytes(dtype)
    if lora is None:
        return Trainable(dense, expert, dense, expert, (dense + expert) * s)
    adapter_dense, adapter_expert = lora_params(arch, lora)
    base = (dense + expert) * s
    if lora.quantized_base:  # block matrices (routed experts among them) in NF4
        base -= (c.block_linear / shard + expert) * (s - NF4_BYTES)
    return Trainable(dense, expert, adapter_dense / shard, adapter_expert / (shard * lay.ep), base)


def optimizer_traffic_per_param(optimizer: Optimizer, dtype: Dtype) -> float:
    """Bytes per trained parameter an optimizer step moves besides the forward/backward reads.

    Gradients written then read (2 g), optimizer state read and written (2 o), and the weights
    updated: with an fp32 master copy (inside o) only the 16-bit copy is written (w); without
    one the weights themselves are read and written (2 w). 16-bit AdamW: 4 + 24 + 2 = 30 bytes.
    """
    grad, opt = state_bytes_per_param(optimizer, dtype)
    s = dtype_bytes(dtype)
    return 2 * grad + 2 * opt + (s if _has_master(dtype) else 2 * s)


def state_bytes_per_param(optimizer: Optimizer, dtype: Dtype) -> tuple[float, float]:
    """(gradient, optimizer incl. master weights) bytes per trained parameter.

    16-bit AdamW: 2 + (4 + 4 + 4) = 14, which with the 2-byte weight makes the 16 bytes per
    parameter of docs/formulas.md#training.
    """
    master = MASTER_WEIGHT_BYTES if _has_master(dtype) else 0.0
    return dtype_bytes(dtype), OPTIMIZER_STATE_BYTES[optimizer] + master


def _has_master(dtype: Dtype) -> bool:
    """Mixed precision keeps an fp32 master copy of weights trained in fewer bytes."""
    return dtype_bytes(dtype) < MASTER_WEIGHT_BYTES


def zero_divisors(stage: int, replicas: int) -> tuple[int, int, int]:
    """How many ways ZeRO stage `stage` splits (weights, gradients, optimizer state) over
    `replicas` data-parallel replicas: stage 1 the optimizer state, 2 also the gradients, 3 also
    the weights (Rajbhandari et al. 2020; FSDP's full shard is stage 3)."""
    return (
        replicas if stage >= 3 else 1,
        replicas if stage >= 2 else 1,
        replicas if stage >= 1 else 1,
    )


def activation_bytes_per_layer(
    arch: Architecture,
    *,
    micro_batch: float,
    seq_len: float,
    dtype: Dtype,
    tp: int,
    flash: bool,
    recompute: bool,
    cp: int = 1,
) -> float:
    """Activations one layer saves for the backward pass, per chip (Korthikanti et al., Table 2).

    S b d (10 + 24/t + 5 a S / (d t)) bytes with tensor parallelism t; flash attention stores no
    S x S scores, dropping the last term; full recomputation keeps only the layer's input,
    2 S b d. Scaled from 16-bit elements to `dtype`. Context parallelism keeps S/cp of each
    sequence's tokens on a chip (their scores against all S keys): all of it divided by cp.
    """
    sbd = seq_len * micro_batch * arch.hidden
    if recompute:
        per_layer = 2.0 * sbd
    else:
        per_layer = sbd * (10 + 24 / tp)
        if not flash:
            per_layer += sbd * 5 * arch.attention.heads * seq_len / (arch.hidden * tp)
    return per_layer * dtype_bytes(dtype) / _KORTHIKANTI_BYTES / cp


def micro_batch_activations(
    arch: Architecture,
    lay: Layout,
    *,
    seq_len: float,
    dtype: Dtype,
    flash: bool,
    recompute: bool,
) -> tuple[float, float]:
    """(activations one micro-batch saves in the fullest stage's ceil(L/p) layers, its fp32
    logits b S V 4 / (t cp))."""
    per_layer = activation_bytes_per_layer(
        arch,
        micro_batch=lay.micro_batch,
        seq_len=seq_len,
        dtype=dtype,
        tp=lay.tp,
        flash=flash,
        recompute=recompute,
        cp=lay.cp,
    )
    logits = lay.micro_batch * seq_len * arch.vocab * LOGIT_BYTES / lay.tp / lay.cp
    return lay.stage_layers * per_layer, logits


def activation_bytes(
    arch: Architecture,
    lay: Layout,
    *,
    seq_len: float,
    dtype: Dtype,
    flash: bool,
    recompute: bool,
) -> float:
    """Saved activations per chip: the first pipeline stage holds min(p, m) micro-batches of its
    ceil(L/p) layers (1F1B), plus the fp32 logits of the micro-batch in the loss."""
    layers, logits = micro_batch_activations(
        arch, lay, seq_len=seq_len, dtype=dtype, flash=flash, recompute=recompute
    )
    return lay.in_flight * layers + logits


def training_memory(
    arch: Architecture,
    lay: Layout,
    *,
    seq_len: float,
    dtype: Dtype,
    training: Training,
    flash: bool,
    recompute: bool,
    reserve: float,
) -> MemoryBreakdown:
    """Weights, gradients, optimizer state (ZeRO-sharded) and saved activations per chip.

    Dense parameters are sharded over the dp x ep x cp replicas, routed experts over dp x cp.
    LoRA keeps its adapters in `dtype` beside the frozen base.
    """
    params = trainable(arch, dtype, lay, training.lora)
    grad, opt = state_bytes_per_param(training.optimizer, dtype)
    weights = gradients = optimizer = 0.0
    all_stored = params.stored
    shares = [(params.dense, params.trained_dense, lay.replicas)]
    if params.expert or params.trained_expert:  # routed experts (none in a dense model)
        shares.append((params.expert, params.trained_expert, lay.expert_replicas))
    for stored, trained, replicas in shares:
        w_div, g_div, o_div = zero_divisors(training.parallel.zero, replicas)
        share = stored / all_stored if all_stored else 0.0
        adapters = 0.0 if training.lora is None else trained * dtype_bytes(dtype)
        weights += (params.base_bytes * share + adapters) / w_div
        gradients += trained * grad / g_div
        optimizer += trained * opt / o_div
    activations = activation_bytes(
        arch,
        lay,
        seq_len=seq_len,
        dtype=dtype,
        flash=flash,
        recompute=recompute,
    )
    return MemoryBreakdown(
        weights=weights,
        activations=activations,
        gradients=gradients,
        optimizer=optimizer,
        reserve=reserve,
    )


def max_trainable_params(
    usable_bytes: float, lay: Layout, training: Training, dtype: Dtype
) -> float:
    """The largest model, in parameters, whose weights and training state fit in `usable_bytes`
    per chip. State is split tp ways and over the pp stages (the fullest holding ceil(L/p)/L
    of it), then ZeRO-sharded over the dp x ep x cp replicas. 16-bit AdamW on one 80 GB chip:
    80e9 / 16 = 5e9. LoRA stores only the frozen base (adapters are a fraction of a percent):
    2 bytes per parameter, NF4's 0.516 with QLoRA."""
    w_div, g_div, o_div = zero_divisors(training.parallel.zero, lay.replicas)
    if training.lora is None:
        grad, opt = state_bytes_per_param(training.optimizer, dtype)
        per_param = dtype_bytes(dtype) / w_div + grad / g_div + opt / o_div
    else:
        per_param = (NF4_BYTES if training.lora.quantized_base else dtype_bytes(dtype)) / w_div
    return usable_bytes * lay.tp * lay.pipeline_split / per_param
