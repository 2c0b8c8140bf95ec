"""Transformer architectures and the parameter counts derived from them.

Parameters are computed from the hyperparameters, never typed in
(docs/formulas.md#architectures-and-parameters). Notation:
d hidden size, L layers, H query heads, Hkv key/value heads, dh head dim, F MLP width,
V vocabulary, E routed experts, k experts per token.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from app.engine.units import Dtype


@dataclass(frozen=True, slots=True)
class MLA:
    """DeepSeek's multi-head latent attention (DeepSeek-V2, arXiv:2405.04434, section 2.1)."""

    q_lora_rank: int  # 0: queries projected directly from the hidden state
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True, slots=True)
class Attention:
    """Self-attention of one layer."""

    heads: int
    kv_heads: int
    head_dim: int
    qkv_bias: bool = False
    out_bias: bool = False
    qk_norm: bool = False  # per-head RMSNorm on q and k (Qwen3)
    sinks: bool = False  # one learned sink logit per head (gpt-oss)
    mla: MLA | None = None
    sliding_window: int | None = None
    sliding_layers: int = 0  # how many of the layers use the window

    @property
    def qk_dim(self) -> int:
        """Per-head width of queries and keys."""
        return self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim if self.mla else self.head_dim

    @property
    def v_dim(self) -> int:
        """Per-head width of values."""
        return self.mla.v_head_dim if self.mla else self.head_dim


@dataclass(frozen=True, slots=True)
class MLP:
    """A feed-forward block: gated (SwiGLU/GeGLU, 3 matrices) or plain (2 matrices)."""

    intermediate: int
    gated: bool = True
    bias: bool = False

    def linear(self, d: int) -> int:
        """Weight-matrix elements."""
        return self.up_linear(d) + self.down_linear(d)

    def up_linear(self, d: int) -> int:
        """Weight elements of the projections into the MLP: gate and up (gated), or up."""
        return (2 if self.gated else 1) * d * self.intermediate

    def down_linear(self, d: int) -> int:
        """Weight elements of the projection out of the MLP."""
        return d * self.intermediate

    def biases(self, d: int) -> int:
        """Bias elements (gated: gate and up biases, then the down bias)."""
        if not self.bias:
            return 0
        return (2 if self.gated else 1) * self.intermediate + d


@dataclass(frozen=True, slots=True)
class MoE:
    """Mixture-of-experts layers: E routed experts (k per token) plus always-on shared ones."""

    experts: int
    experts_per_token: int
    expert: MLP
    moe_layers: int
    shared: MLP | None = None  # all shared experts together as one MLP
    router_bias: bool = False


@dataclass(frozen=True, slots=True)
class Quantised:
    """How a checkpoint stores its linear weights where it ships them narrower than 16 bits
    (its config's quantization_config): in `dtype`, the routed experts only where
    `experts_only` (gpt-oss: MXFP4 experts; attention, router, embeddings in bf16)."""

    dtype: Dtype
    experts_only: bool = False


@dataclass(frozen=True, slots=True)
class Architecture:
    """A decoder (or encoder) transformer, as its Hugging Face config describes it."""

    hidden: int
    layers: int
    vocab: int
    attention: Attention
    mlp: MLP  # the MLP of the dense layers
    moe: MoE | None = None
    tied_embeddings: bool = False
    lm_head: bool = True  # False for encoders served without an LM head (BertModel)
    causal: bool = True
    norm_bias: bool = False  # LayerNorm (weight and bias) rather than RMSNorm (weight)
    norms_per_layer: int = 2
    final_norm: bool = True
    embedding_norm: bool = False  # BERT normalises the embeddings
    learned_positions: int = 0  # rows of a learned position table
    token_types: int = 0  # BERT's segment embeddings
    pooler: bool = False  # BERT's pooler: a d x d linear with bias
    max_positions: int | None = None
    quantised: Quantised | None = None  # the checkpoint's format, where narrower than 16 bits

    @property
    def dense_layers(self) -> int:
        """Layers with a dense MLP (all layers of a dense model)."""
        return self.layers - (self.moe.moe_layers if self.moe else 0)

    @property
    def fine_grained_experts(self) -> bool:
        """Whether its experts are fine-grained: each routed expert no wider than the model
        (DeepSeek-V3, Qwen3 MoE, gpt-oss), where a dense MLP and Mixtral's experts are 2.7-4x
        wider. DeepSeekMoE (Dai et al. 2024, https://arxiv.org/abs/2401.06066, section 3.1)
        splits each expert into m narrower ones and routes each token to m times as many:
        many small GEMMs a step, which published runs show reach far less of the roofline
        than one wide MLP or Mixtral's two wide experts (docs/formulas.md#realistic-time)."""
        return self.moe is not None and self.moe.expert.intermediate <= self.hidden


@dataclass(frozen=True, slots=True)
class MatmulParts:
    """The blocks' matrix parameters (ParamCounts.block_linear), by the operation whose
    products use them, over all layers: query, key and value projections (MLA's down and up
    projections), the output projection, the dense MLPs in and out, the routers, the shared
    experts, BERT's pooler."""

    qkv: int
    attention_out: int
    mlp_up: int
    mlp_down: int
    router: int
    shared_experts: int
    pooler: int

    @property
    def block(self) -> int:
        """All of them."""
        return (
            self.qkv
            + self.attention_out
            + self.mlp_up
            + self.mlp_down
            + self.router
            + self.shared_experts
            + self.pooler
        )


@dataclass(frozen=True, slots=True)
class ParamCounts:
    """Parameters of an architecture, split by how they are stored and used.

    `block_linear`: weight matrices of the blocks except routed experts (attention, dense and
    shared MLPs, routers, the pooler): quantised with the weight dtype. `routed_expert`: one
    routed expert's matrices and biases in one layer. `other`: norms, biases and sinks.
    """

    embedding: int
    positions: int
    lm_head: int
    block_linear: int
    routed_expert: int
    other: int
    moe_layers: int
    experts: int
    experts_per_token: int
    head_matmul: int  # the output projection's matrix (the tied embedding counts here once)
    parts: MatmulParts  # block_linear by operation

    @property
    def routed_total(self) -> int:
        """Every routed expert in every MoE layer."""
        return self.moe_layers * self.experts * self.routed_expert

    @property
    def total(self) -> int:
        """All parameters."""
        return (
            self.embedding
            + self.positions
            + self.lm_head
            + self.block_linear
            + self.routed_total
            + self.other
        )

    @property
    def active(self) -> int:
        """Parameters used per token: routed experts count k of E."""
        return self.total - self.moe_layers * (self.experts - self.experts_per_token) * (
            self.routed_expert
        )

    @property
    def matmul(self) -> int:
        """N_mm: parameters taking part in matrix products, all experts counted."""
        return self.block_linear + self.routed_total + self.head_matmul

    @property
    def matmul_active(self) -> int:
        """N_mm per token: k routed experts per MoE layer."""
        return (
            self.block_linear
            + self.moe_layers * self.experts_per_token * self.routed_expert
            + self.head_matmul
        )

    @property
    def lookup_only(self) -> int:
        """Tables only indexed, never streamed whole: positions, untied input embeddings."""
        untied_input = self.embedding if (self.lm_head or not self.head_matmul) else 0
        return self.positions + untied_input


def _attention_params(att: Attention, d: int) -> tuple[int, int, int]:
    """(matrix elements into the heads: q, k, v; matrix elements out: o; other elements) of one
    attention layer."""
    h = att.heads
    if att.mla is not None:
        m = att.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank:
            q = d * m.q_lora_rank + m.q_lora_rank * h * qk
            q_norm = m.q_lora_rank
        else:
            q, q_norm = d * h * qk, 0
        kv = d * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * h * (
            m.qk_nope_head_dim + m.v_head_dim
        )
        out = h * m.v_head_dim * d
        return q + kv, out, q_norm + m.kv_lora_rank
    q_width = h * att.head_dim
    kv_width = att.kv_heads * att.head_dim
    other = (q_width + 2 * kv_width) * att.qkv_bias + d * att.out_bias
    other += 2 * att.head_dim * att.qk_norm + h * att.sinks
    return d * q_width + 2 * d * kv_width, q_width * d, other


# the counts are a property of the architecture, which the catalog fixes: each model's are
# kept, as its config's derived shapes
@lru_cache(maxsize=256)
def param_counts(arch: Architecture) -> ParamCounts:
    """Count the parameters of `arch` from its hyperparameters."""
    d = arch.hidden
    att_in, att_out, att_other = _attention_params(arch.attention, d)
    norm = d * (2 if arch.norm_bias else 1)
    other = arch.layers * (att_other + arch.norms_per_layer * norm)
    other += arch.dense_layers * arch.mlp.biases(d)
    other += norm * (arch.final_norm + arch.embedding_norm)
    routed_expert = experts = per_token = moe_layers = router = shared = 0
    if arch.moe is not None:
        moe = arch.moe
        moe_layers, experts, per_token = moe.moe_layers, moe.experts, moe.experts_per_token
        routed_expert = moe.expert.linear(d) + moe.expert.biases(d)
        router = moe_layers * moe.experts * d
        other += moe_layers * moe.experts * moe.router_bias
        if moe.shared is not None:
            shared = moe_layers * moe.shared.linear(d)
            other += moe_layers * moe.shared.biases(d)
    if arch.pooler:
        other += d
    parts = MatmulParts(
        qkv=arch.layers * att_in,
        attention_out=arch.layers * att_out,
        mlp_up=arch.dense_layers * arch.mlp.up_linear(d),
        mlp_down=arch.dense_layers * arch.mlp.down_linear(d),
        router=router,
        shared_experts=shared,
        pooler=d * d if arch.pooler else 0,
    )
    embedding = arch.vocab * d
    head_matmul = embedding if arch.lm_head else 0
    return ParamCounts(
        embedding=embedding,
        positions=(arch.learned_positions + arch.token_types) * d,
        lm_head=0 if arch.tied_embeddings or not arch.lm_head else embedding,
        block_linear=parts.block,
        routed_expert=routed_expert,
        other=other,
        moe_layers=moe_layers,
        experts=experts,
        experts_per_token=per_token,
        head_matmul=head_matmul,
        parts=parts,
    )


def kv_elements_per_token(arch: Architecture) -> int:
    """KV-cache elements one token adds in one layer: 2 Hkv dh (MLA: kv_lora_rank + rope dim)."""
    att = arch.attention
    if att.mla is not None:
        return att.mla.kv_lora_rank + att.mla.qk_rope_head_dim
    return 2 * att.kv_heads * att.head_dim


def cached_token_layers(arch: Architecture, context: float) -> float:
    """Sum over layers of the tokens each layer keeps cached (and attends to) at `context`.

    Full-attention layers keep all `context` tokens; sliding-window layers at most the window.
    """
    att = arch.attention
    if att.sliding_window is None or att.sliding_layers == 0:
        return arch.layers * context
    full = arch.layers - att.sliding_layers
    return full * context + att.sliding_layers * min(context, att.sliding_window)
