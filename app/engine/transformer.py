"""FLOPs and bytes of transformer workloads per chip (docs/formulas.md#transformer-workloads).

Only the matrix products (linear layers, lm_head, attention) are counted as FLOPs; norms,
activations and softmax add < 1% and run on the vector units concurrently. Tensor parallelism
over `tp` chips splits weights and FLOPs `tp` ways and the KV cache over min(tp, Hkv) (MLA's
latent cache is replicated); the residual stream is replicated on every chip.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from app.engine.architecture import (
    Architecture,
    cached_token_layers,
    kv_elements_per_token,
    param_counts,
)
from app.engine.breakdown import Term, totals
from app.engine.errors import InvalidInput
from app.engine.kernels import attention_pairs, score_traffic, sparse_bytes
from app.engine.roofline import Work
from app.engine.units import Dtype, Unit, dtype_bytes


class Phase(StrEnum):
    """What the model is doing."""

    PREFILL = "prefill"
    DECODE = "decode"
    GENERATE = "generate"
    TRAINING = "training"


@dataclass(frozen=True, slots=True)
class Precision:
    """Dtypes of the matmul inputs and activations, of stored weights, and of the KV cache.

    Weight-only quantisation (w4a16: weights int4, compute bf16) stores the blocks' linear
    weights in `weights`; embeddings, lm_head, norms and biases stay in `compute`, as GPTQ,
    AWQ and bitsandbytes leave them (and a checkpoint that quantises its experts alone leaves
    the other linear weights too: `linear_sizes`). Quantisation scales are not counted, but
    in the sizes of the block formats that carry them: MXFP4's 8-bit scale per 32 values,
    llama.cpp's Q4_0 and Q8_0 fp16 scale per 32, GPTQ's and AWQ's fp16 scale and 4-bit zero
    per 128 (INT4_G128), gpt-fast's bf16 scale and zero per 32 (INT4_G32).

    `sparse`: the blocks' linear weights (attention projections, MLPs, routers and experts)
    are 2:4 structured-sparse, stored compressed in `weights` (`sparse_bytes`), their
    products at the chip's sparse rate; embeddings, lm_head, norms and attention's own
    products stay dense (docs/formulas.md#structured-sparsity).
    """

    compute: Dtype = Dtype.BF16
    weights: Dtype = Dtype.BF16
    kv: Dtype = Dtype.BF16
    sparse: bool = False


def experts_touched(experts: int, per_token: int, tokens: float) -> float:
    """Expected distinct experts a layer reads for `tokens` tokens routed uniformly.

    E (1 - (1 - k/E)^tokens): each expert is missed by one token with probability 1 - k/E.
    """
    if experts == 0:
        return 0.0
    return experts * (1.0 - math.pow(1.0 - per_token / experts, tokens))


def linear_sizes(arch: Architecture, precision: Precision) -> tuple[float, float]:
    """Bytes per parameter of the blocks' linear weights other than the routed experts, and
    of the routed experts: the weight dtype's, except that the format of a checkpoint that
    quantises its experts alone (gpt-oss's MXFP4) leaves the others in the compute dtype, as
    that checkpoint keeps them; 2:4 sparse weights, compressed."""
    s_w = dtype_bytes(precision.weights)
    q = arch.quantised
    if q is not None and q.experts_only and precision.weights == q.dtype:
        sizes = dtype_bytes(precision.compute), s_w
    else:
        sizes = s_w, s_w
    if precision.sparse:
        return sparse_bytes(sizes[0]), sparse_bytes(sizes[1])
    return sizes


def weight_bytes(arch: Architecture, precision: Precision) -> float:
    """Bytes of all the weights, resident in memory (what a forward pass streams of them, by
    operation, is `linear_terms`'s)."""
    c = param_counts(arch)
    (s_w, s_e), s_c = linear_sizes(arch, precision), dtype_bytes(precision.compute)
    unquantised = c.other + c.head_matmul
    return s_w * c.block_linear + s_e * c.routed_total + s_c * (unquantised + c.lookup_only)


def linear_terms(
    arch: Architecture, tokens: float, precision: Precision, tp: int, experts_read: float
) -> list[Term]:
    """The matrix products of a forward pass over `tokens` tokens, per chip, by operation:
    2 x (its matrix parameters) x tokens FLOPs (2 N_mm tokens in all), and the weights it
    streams once, quantised ones in the weight dtype (`experts_read` distinct routed experts
    per MoE layer); the norms' weights and the biases, in the compute dtype, with no FLOPs
    counted. Lookup tables (positions, an untied input embedding) are only indexed, not
    streamed. With sparse weights the blocks' products are the sparse terms."""
    c = param_counts(arch)
    p = c.parts
    (s_w, s_e), s_c = linear_sizes(arch, precision), dtype_bytes(precision.compute)
    moe = c.moe_layers
    per_op = (  # name, count, matrix parameters used per token, bytes streamed
        ("qkv_projection", arch.layers, p.qkv, s_w * p.qkv),
        ("output_projection", arch.layers, p.attention_out, s_w * p.attention_out),
        (
            "mlp_gate_up" if arch.mlp.gated else "mlp_up",
            arch.dense_layers,
            p.mlp_up,
            s_w * p.mlp_up,
        ),
        ("mlp_down", arch.dense_layers, p.mlp_down, s_w * p.mlp_down),
        ("router", moe, p.router, s_w * p.router),
        # the routed experts stream moe x experts_read x routed_expert parameters: some
        # wherever tokens use any (no expert is read for tokens routed to none)
        (
            "experts",
            moe,
            moe * c.experts_per_token * c.routed_expert,
            s_e * (moe * experts_read * c.routed_expert),
        ),
        ("shared_experts", moe, p.shared_experts, s_w * p.shared_experts),
        ("pooler", 1, p.pooler, s_w * p.pooler),
        ("lm_head", 1, c.head_matmul, s_c * c.head_matmul),
        ("norms_and_biases", arch.layers, 0, s_c * c.other),
    )
    dense = ("lm_head", "norms_and_biases")
    return [
        Term(
            name,
            count,
            flops=2.0 * used * tokens / tp,
            bytes=streamed / tp,
            sparse=precision.sparse and name not in dense,
        )
        for name, count, used, streamed in per_op
        if used or streamed
    ]


def kv_shards(arch: Architecture, tp: int) -> int:
    """Chips the KV cache is split over: KV heads split across tp (MLA's latent is shared)."""
    if arch.attention.mla is not None:
        return 1
    return min(tp, arch.attention.kv_heads)


def kv_bytes_per_token(arch: Architecture, kv_dtype: Dtype) -> float:
    """KV-cache bytes one token adds across all layers: 2 L Hkv dh s (MLA: L (r_kv + d_rope) s);
    none for an encoder, which keeps no cache."""
    if not arch.causal:
        return 0.0
    return arch.layers * kv_elements_per_token(arch) * dtype_bytes(kv_dtype)


def kv_cache_bytes(arch: Architecture, kv_dtype: Dtype, batch: float, context: float) -> float:
    """KV cache held for `batch` sequences of `context` tokens (sliding layers hold the window)."""
    if not arch.causal:
        return 0.0
    return (
        batch
        * cached_token_layers(arch, context)
        * kv_elements_per_token(arch)
        * dtype_bytes(kv_dtype)
    )


def _attention_flops_per_pair(arch: Architecture, *, absorbed: bool) -> float:
    """FLOPs per (query, key) score entry in one layer, all heads: 2 H (d_qk + d_v).

    MLA decode attends over the cached latent with the up-projections absorbed into q and o
    (DeepSeek-V2, section 2.1.2): d_qk = r_kv + d_rope, d_v = r_kv; the absorbed projections
    cost the same FLOPs as the ones they replace, so N_mm is unchanged.
    """
    att = arch.attention
    if absorbed and att.mla is not None:
        return 2.0 * att.heads * (2 * att.mla.kv_lora_rank + att.mla.qk_rope_head_dim)
    return 2.0 * att.heads * (att.qk_dim + att.v_dim)


def _prompt_pairs(arch: Architecture, length: int) -> float:
    """Score entries of a full forward over `length` tokens, summed over layers."""
    att = arch.attention
    full_layers = arch.layers - att.sliding_layers
    pairs = full_layers * attention_pairs(length, length, causal=arch.causal)
    if att.sliding_layers:
        pairs += att.sliding_layers * attention_pairs(
            length, length, causal=arch.causal, window=att.sliding_window
        )
    return pairs


# Without a fused (flash) kernel the scores reach memory in fp32: llama.cpp's KQ product and
# its softmax are F32 (llm_build_kqv, ggml_soft_max_ext), and PyTorch's eager attention
# (Hugging Face's) writes its scores in the compute dtype, reads them into an fp32 softmax and
# casts the probabilities back: 2 + 2 + 4 + 4 + 2 + 2 = 16 bytes a score, four fp32 accesses.
SCORE_DTYPE = Dtype.FP32
SCORES_TERM = "attention_scores"  # the breakdown's name of that traffic


def _score_terms(arch: Architecture, scores_per_head: float, tp: int, flash: bool) -> list[Term]:
    """The term of the scores of every head without a fused kernel, the bytes they move per
    chip (`score_traffic`); none with one (flash)."""
    if flash:
        return []
    traffic = score_traffic(arch.attention.heads * scores_per_head / tp, SCORE_DTYPE)
    return [Term(SCORES_TERM, arch.layers, bytes=traffic)]


def _check(batch: float, length: int, tp: int, arch: Architecture) -> None:
    if batch < 1:
        raise InvalidInput("batch", f"must be >= 1, got {batch}")
    if length < 1:
        raise InvalidInput("seq_len", f"must be >= 1, got {length}")
    if tp < 1:
        raise InvalidInput("tp", f"must be >= 1, got {tp}")
    if tp > arch.attention.heads:
        raise InvalidInput(
            "tp", f"must be <= the model's {arch.attention.heads} attention heads, got {tp}"
        )


def residual_bytes(arch: Architecture, tokens: float, dtype: Dtype) -> float:
    """Residual-stream traffic of a forward pass: each layer reads and writes d per token."""
    return arch.layers * 2.0 * tokens * arch.hidden * dtype_bytes(dtype)


def prefill_terms(
    arch: Architecture,
    batch: float,
    prompt: int,
    precision: Precision,
    tp: int = 1,
    *,
    flash: bool = True,
) -> list[Term]:
    """A forward pass over `batch` prompts of `prompt` tokens, per chip, by operation.

    FLOPs = 2 N_mm B P + attention (2 L B P^2 H dh when causal); bytes = weights streamed once
    + KV written (B P kv) + the residual stream read and written per layer (2 L B P d s);
    without a flash kernel, + the scores in fp32 (16 B x L B H P^2 / 2 when causal).
    """
    _check(batch, prompt, tp, arch)
    c = param_counts(arch)
    tokens = batch * prompt
    pairs = batch * _prompt_pairs(arch, prompt)
    flops = _attention_flops_per_pair(arch, absorbed=False) * pairs
    touched = experts_touched(c.experts, c.experts_per_token, tokens)
    written_kv = tokens * kv_bytes_per_token(arch, precision.kv) / kv_shards(arch, tp)
    linear = linear_terms(arch, tokens, precision, tp, touched)
    return [
        *linear[:1],
        Term("attention", arch.layers, flops=flops / tp, bytes=written_kv, flash=flash),
        *_score_terms(arch, pairs, tp, flash),
        *linear[1:],
        Term(
            "residual_stream",
            arch.layers,
            bytes=residual_bytes(arch, tokens, precision.compute),
        ),
    ]


def work_of(terms: Sequence[Term], precision: Precision) -> Work:
    """The work of a pass's or a training step's terms: their FLOPs and bytes together, on
    the matrix unit in the compute dtype, the sparse terms' FLOPs at the sparse rate, the wide
    ones' (kept at 16 bits in a narrower step) at the WIDE peak."""
    flops, traffic = totals(terms)
    sparse = sum(t.flops for t in terms if t.sparse)
    wide = sum(t.flops for t in terms if t.wide)
    return Work(
        flops, traffic, precision.compute, Unit.MATRIX, sparse_flops=sparse, wide_flops=wide
    )


def decode_terms(
    arch: Architecture,
    batch: float,
    context: int,
    precision: Precision,
    tp: int = 1,
    *,
    flash: bool = True,
) -> list[Term]:
    """One decode step, per chip, by operation: `batch` sequences each add one token after
    `context` cached ones.

    FLOPs = B (2 N_mm + attention over the cache: 4 L C H dh); bytes = weights streamed once
    (MoE: the distinct experts B tokens touch) + KV read (B C kv) + KV written (B kv);
    without a flash kernel, + the scores in fp32 (16 B x L B H C). Activations (B x d per
    layer) are negligible next to the weights and are left out.
    """
    _check(batch, context, tp, arch)
    if not arch.causal:
        raise InvalidInput("phase", "an encoder has no decode phase; use prefill or training")
    c = param_counts(arch)
    pairs = batch * cached_token_layers(arch, context)
    flops = _attention_flops_per_pair(arch, absorbed=True) * pairs
    touched = experts_touched(c.experts, c.experts_per_token, batch)
    shards = kv_shards(arch, tp)
    kv_read = kv_cache_bytes(arch, precision.kv, batch, context) / shards
    kv_written = batch * kv_bytes_per_token(arch, precision.kv) / shards
    linear = linear_terms(arch, batch, precision, tp, touched)
    return [
        *linear[:1],
        Term("attention", arch.layers, flops=flops / tp, bytes=kv_read + kv_written, flash=flash),
        *_score_terms(arch, pairs, tp, flash),
        *linear[1:],
    ]
