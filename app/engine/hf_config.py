"""Build an Architecture from a Hugging Face `config.json` (as a dict).

Field names and class defaults follow the `transformers` configuration classes of each
`model_type`; where a family hard-codes something the config does not say (Qwen2's q/k/v
biases, Gemma-2's four norms per layer, OPT's position-table offset) it is set here, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from app.engine.architecture import MLA, MLP, Architecture, Attention, MoE, Quantised
from app.engine.errors import InvalidArchitecture
from app.engine.units import Dtype

_FIELD = "config"

# The largest value each size of a config may take: far above the largest real models (the
# largest published value is named), low enough that no inline config can ask for absurd work
# or overflow a product of sizes. A field over its bound is a 422 that names the bound.
_LAYERS = 1024  # LLMs reach 126 (Llama 3.1 405B); DeepNet trained 1,000 (arXiv:2203.00555)
_HEADS = 4096  # 128 query heads at most (Llama 3.1 405B, DeepSeek-V3, MT-NLG 530B)
_WIDTH = 2**18  # hidden sizes reach 20,480 and MLP widths 81,920 (MT-NLG 530B)
_VOCAB = 2**21  # vocabularies reach 262,144 tokens (Gemma 3)
_EXPERTS = 2**14  # 2,048 routed experts (Switch-C, arXiv:2101.03961); LLMs 384 (Kimi K2)
_POSITIONS = 10**8  # positions and windows: the longest seq_len the API takes
_MAXIMUM = {
    **dict.fromkeys(
        ["num_hidden_layers", "n_layer", "first_k_dense_replace", "moe_layer_freq"], _LAYERS
    ),
    "decoder_sparse_step": _LAYERS,
    **dict.fromkeys(["num_attention_heads", "n_head", "num_key_value_heads"], _HEADS),
    **dict.fromkeys(
        ["hidden_size", "n_embd", "head_dim", "intermediate_size", "n_inner", "ffn_dim"], _WIDTH
    ),
    **dict.fromkeys(
        ["moe_intermediate_size", "word_embed_proj_dim", "q_lora_rank", "kv_lora_rank"], _WIDTH
    ),
    **dict.fromkeys(["qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"], _WIDTH),
    **dict.fromkeys(["vocab_size", "type_vocab_size"], _VOCAB),
    **dict.fromkeys(["num_local_experts", "num_experts", "n_routed_experts"], _EXPERTS),
    **dict.fromkeys(["num_experts_per_tok", "n_shared_experts"], _EXPERTS),
    **dict.fromkeys(["max_position_embeddings", "n_positions", "sliding_window"], _POSITIONS),
}

# transformers' default tie_word_embeddings per model_type (PretrainedConfig's own default is
# True; the Llama-style configs override it to False).
_UNTIED_BY_DEFAULT = frozenset(
    {"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "phi3", "deepseek_v3", "gpt_oss"}
)
_GATED_ACTS = frozenset({"silu", "swish", "gelu_pytorch_tanh", "gelu"})


class _Config:
    """Typed access to a config dict; errors name the field."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw

    def integer(self, *names: str, default: int | None = None, minimum: int = 1) -> int:
        for name in names:
            value = self.raw.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArchitecture(f"{_FIELD}.{name}", f"must be an integer, got {value!r}")
            if not minimum <= value <= _MAXIMUM[name]:
                raise InvalidArchitecture(
                    f"{_FIELD}.{name}",
                    f"must be between {minimum} and {_MAXIMUM[name]}, got {value}",
                )
            return value
        if default is None:
            raise InvalidArchitecture(f"{_FIELD}.{names[0]}", "is required")
        return default

    def boolean(self, name: str, default: bool) -> bool:
        value = self.raw.get(name, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise InvalidArchitecture(f"{_FIELD}.{name}", f"must be true or false, got {value!r}")
        return value

    def integers(self, name: str) -> list[int]:
        value = self.raw.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
            raise InvalidArchitecture(f"{_FIELD}.{name}", "must be a list of integers")
        return value


def architecture_from_config(raw: Mapping[str, Any]) -> Architecture:
    """Parse a Hugging Face config dict into an Architecture.

    Known model_types: llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, gemma, gemma2, phi3,
    deepseek_v3, gpt_oss, gpt2, bert, opt; any other with Llama-style fields is read as Llama.
    """
    if not isinstance(raw, Mapping):
        raise InvalidArchitecture(_FIELD, "must be a JSON object (a config.json)")
    cfg = _Config(raw)
    model_type = str(raw.get("model_type", "llama"))
    if model_type == "gpt2":
        arch = _gpt2(cfg)
    elif model_type == "bert":
        arch = _bert(cfg)
    elif model_type == "opt":
        arch = _opt(cfg)
    else:
        arch = _llama_like(cfg, model_type)
    return replace(arch, quantised=_quantised(raw.get("quantization_config")))


# quantization_config's quant_method -> the format its weights are stored in (transformers'
# quantizers of the same names): MXFP4 (gpt-oss), fp8 e4m3 with block scales (DeepSeek-V3)
_FORMATS = {"mxfp4": Dtype.MXFP4, "fp8": Dtype.FP8}
# GPTQ's and AWQ's 4-bit weights in groups of 128 with their zero points (AWQ's zero_point)
_GROUPED = ("gptq", "awq")


def _format(config: Mapping[str, Any], method: str) -> Dtype | None:
    """The storage format a quantization_config of `method` names, where the engine has it."""
    if method in _FORMATS:
        return _FORMATS[method]
    grouped = (config.get("bits"), config.get("group_size"), config.get("zero_point", True))
    return Dtype.INT4_G128 if method in _GROUPED and grouped == (4, 128, True) else None


def _quantised(config: Any) -> Quantised | None:
    """The checkpoint's format, from its quantization_config: None for one it does not name
    (or a method stored otherwise). Attention left unconverted (modules_to_not_convert names
    self_attn, as gpt-oss's does) leaves the routed experts alone quantised."""
    method = config.get("quant_method") if isinstance(config, Mapping) else None
    dtype = _format(config, method) if isinstance(method, str) else None
    if dtype is None:
        return None
    kept = config.get("modules_to_not_convert") or []
    experts_only = isinstance(kept, list) and any("self_attn" in str(name) for name in kept)
    return Quantised(dtype, experts_only)


def _heads(cfg: _Config, d: int, heads_name: str = "num_attention_heads") -> tuple[int, int, int]:
    heads = cfg.integer(heads_name)
    kv_heads = cfg.integer("num_key_value_heads", default=heads)
    if heads % kv_heads:
        raise InvalidArchitecture(
            f"{_FIELD}.num_key_value_heads", f"must divide num_attention_heads ({heads})"
        )
    if cfg.raw.get("head_dim") is None and d % heads:
        raise InvalidArchitecture(
            f"{_FIELD}.num_attention_heads",
            f"must divide hidden_size ({d}) when head_dim is not given",
        )
    return heads, kv_heads, cfg.integer("head_dim", default=d // heads)


def _sliding(cfg: _Config, model_type: str, layers: int) -> tuple[int | None, int]:
    window = cfg.raw.get("sliding_window")
    if window is None or cfg.raw.get("use_sliding_window") is False:
        return None, 0
    window = cfg.integer("sliding_window")
    layer_types = cfg.raw.get("layer_types")
    if isinstance(layer_types, list):
        if len(layer_types) != layers:
            raise InvalidArchitecture(
                f"{_FIELD}.layer_types", f"must list one type per layer ({layers})"
            )
        return window, sum(t == "sliding_attention" for t in layer_types)
    if model_type == "gemma2":  # even-numbered layers slide (Gemma2DecoderLayer.is_sliding)
        return window, (layers + 1) // 2
    if model_type == "gpt_oss":  # alternating, starting with a sliding layer
        return window, (layers + 1) // 2
    if model_type in {"mistral", "mixtral", "phi3"}:
        return window, layers
    return None, 0  # Qwen2/3 ship sliding_window but disable it (use_sliding_window false)


def _llama_like(cfg: _Config, model_type: str) -> Architecture:
    d = cfg.integer("hidden_size")
    layers = cfg.integer("num_hidden_layers")
    heads, kv_heads, head_dim = _heads(cfg, d)
    window, sliding_layers = _sliding(cfg, model_type, layers)
    bias = cfg.boolean("attention_bias", model_type == "gpt_oss")
    mla = None
    if model_type == "deepseek_v3" or cfg.raw.get("kv_lora_rank") is not None:
        mla = MLA(
            q_lora_rank=cfg.integer("q_lora_rank", default=0, minimum=0),
            kv_lora_rank=cfg.integer("kv_lora_rank"),
            qk_nope_head_dim=cfg.integer("qk_nope_head_dim"),
            qk_rope_head_dim=cfg.integer("qk_rope_head_dim"),
            v_head_dim=cfg.integer("v_head_dim"),
        )
    attention = Attention(
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        qkv_bias=bias or model_type == "qwen2",  # Qwen2Attention hard-codes q/k/v biases
        out_bias=bias,
        qk_norm=model_type in {"qwen3", "qwen3_moe"},
        sinks=model_type == "gpt_oss",
        mla=mla,
        sliding_window=window,
        sliding_layers=sliding_layers,
    )
    act = str(cfg.raw.get("hidden_act", "silu"))
    if act not in _GATED_ACTS:
        raise InvalidArchitecture(
            f"{_FIELD}.hidden_act", f"Llama-style gated MLPs use silu or gelu, got {act!r}"
        )
    mlp_bias = cfg.boolean("mlp_bias", False)
    dense_width = cfg.integer("intermediate_size", default=0, minimum=0)
    moe = _moe(cfg, model_type, d, layers)
    if dense_width == 0 and (moe is None or moe.moe_layers < layers):
        raise InvalidArchitecture(f"{_FIELD}.intermediate_size", "is required")
    return Architecture(
        hidden=d,
        layers=layers,
        vocab=cfg.integer("vocab_size"),
        attention=attention,
        mlp=MLP(dense_width, gated=True, bias=mlp_bias),
        moe=moe,
        tied_embeddings=cfg.boolean("tie_word_embeddings", model_type not in _UNTIED_BY_DEFAULT),
        norms_per_layer=4 if model_type == "gemma2" else 2,
        max_positions=cfg.integer("max_position_embeddings", default=0, minimum=0) or None,
    )


def _moe(cfg: _Config, model_type: str, d: int, layers: int) -> MoE | None:
    experts = cfg.integer(
        "num_local_experts", "num_experts", "n_routed_experts", default=0, minimum=0
    )
    if experts == 0:
        return None
    per_token = cfg.integer("num_experts_per_tok")
    if per_token > experts:
        raise InvalidArchitecture(
            f"{_FIELD}.num_experts_per_tok", f"must be <= the number of experts ({experts})"
        )
    width = cfg.integer("moe_intermediate_size", "intermediate_size")
    if model_type == "deepseek_v3" or cfg.raw.get("first_k_dense_replace") is not None:
        first_dense = cfg.integer("first_k_dense_replace", default=0, minimum=0)
        freq = cfg.integer("moe_layer_freq", default=1)
        # layers i in [first_dense, layers) with i % freq == 0: the multiples of freq there
        moe_layers = max(0, -(-layers // freq) - -(-first_dense // freq))
    else:
        step = cfg.integer("decoder_sparse_step", default=1)
        # every step-th layer (i + 1 a multiple of step), less the dense-only ones among them
        sparse_dense = {
            i for i in cfg.integers("mlp_only_layers") if 0 <= i < layers and (i + 1) % step == 0
        }
        moe_layers = layers // step - len(sparse_dense)
    shared_count = cfg.integer("n_shared_experts", default=0, minimum=0)
    biased = model_type == "gpt_oss"  # gpt-oss experts and router carry biases
    return MoE(
        experts=experts,
        experts_per_token=per_token,
        expert=MLP(width, gated=True, bias=biased),
        moe_layers=moe_layers,
        shared=MLP(width * shared_count, gated=True) if shared_count else None,
        # DeepSeek-V3's router keeps a per-expert score-correction bias (noaux_tc routing)
        router_bias=biased or model_type == "deepseek_v3",
    )


def _gpt2(cfg: _Config) -> Architecture:
    d = cfg.integer("n_embd", "hidden_size")
    heads = cfg.integer("n_head", "num_attention_heads")
    if d % heads:
        raise InvalidArchitecture(f"{_FIELD}.n_head", f"must divide n_embd ({d})")
    return Architecture(
        hidden=d,
        layers=cfg.integer("n_layer", "num_hidden_layers"),
        vocab=cfg.integer("vocab_size"),
        attention=Attention(heads, heads, d // heads, qkv_bias=True, out_bias=True),
        mlp=MLP(cfg.integer("n_inner", default=4 * d), gated=False, bias=True),
        tied_embeddings=cfg.boolean("tie_word_embeddings", True),
        norm_bias=True,
        learned_positions=cfg.integer("n_positions", "max_position_embeddings"),
        max_positions=cfg.integer("n_positions", "max_position_embeddings"),
    )


def _bert(cfg: _Config) -> Architecture:
    d = cfg.integer("hidden_size")
    heads = cfg.integer("num_attention_heads")
    if d % heads:
        raise InvalidArchitecture(f"{_FIELD}.num_attention_heads", f"must divide hidden_size ({d})")
    positions = cfg.integer("max_position_embeddings", default=512)
    return Architecture(
        hidden=d,
        layers=cfg.integer("num_hidden_layers"),
        vocab=cfg.integer("vocab_size"),
        attention=Attention(heads, heads, d // heads, qkv_bias=True, out_bias=True),
        mlp=MLP(cfg.integer("intermediate_size", default=4 * d), gated=False, bias=True),
        tied_embeddings=True,
        lm_head=False,  # BertModel: hidden states and the pooled output, no LM head
        causal=False,
        norm_bias=True,
        final_norm=False,  # post-LN: each block ends with its own norm
        embedding_norm=True,
        learned_positions=positions,
        token_types=cfg.integer("type_vocab_size", default=2),
        pooler=True,
        max_positions=positions,
    )


def _opt(cfg: _Config) -> Architecture:
    d = cfg.integer("hidden_size")
    heads = cfg.integer("num_attention_heads")
    if d % heads:
        raise InvalidArchitecture(f"{_FIELD}.num_attention_heads", f"must divide hidden_size ({d})")
    if cfg.integer("word_embed_proj_dim", default=d) != d:
        raise InvalidArchitecture(
            f"{_FIELD}.word_embed_proj_dim",
            "OPT models with an embedding projection are not modelled",
        )
    bias = cfg.boolean("enable_bias", True)
    positions = cfg.integer("max_position_embeddings")
    return Architecture(
        hidden=d,
        layers=cfg.integer("num_hidden_layers"),
        vocab=cfg.integer("vocab_size"),
        attention=Attention(heads, heads, d // heads, qkv_bias=bias, out_bias=bias),
        mlp=MLP(cfg.integer("ffn_dim"), gated=False, bias=bias),
        tied_embeddings=cfg.boolean("tie_word_embeddings", True),
        norm_bias=True,
        final_norm=cfg.boolean("do_layer_norm_before", True),
        learned_positions=positions + 2,  # OPTLearnedPositionalEmbedding's offset of 2
        max_positions=positions,
    )
