"""A Hugging Face config that is incomplete or inconsistent is refused, naming its field."""

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine.errors import InvalidArchitecture
from app.engine.hf_config import architecture_from_config

LLAMA: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 100,
    "max_position_embeddings": 256,
}
GPT2: dict[str, Any] = {
    "model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100,
    "n_positions": 256,
}  # fmt: skip
BERT: dict[str, Any] = {
    "model_type": "bert", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
    "vocab_size": 100,
}  # fmt: skip
OPT: dict[str, Any] = {
    "model_type": "opt", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
    "vocab_size": 100, "max_position_embeddings": 256, "ffn_dim": 256,
}  # fmt: skip
MOE = {"num_local_experts": 4, "num_experts_per_tok": 2}


@pytest.mark.parametrize("base", [LLAMA, GPT2, BERT, OPT])
def test_the_valid_bases_parse(base):
    assert architecture_from_config(base).hidden == 64


@pytest.mark.parametrize(
    ("base", "change", "field"),
    [
        (LLAMA, {"hidden_size": "64"}, "hidden_size"),
        (LLAMA, {"hidden_size": True}, "hidden_size"),
        (LLAMA, {"hidden_size": 0}, "hidden_size"),
        (LLAMA, {"vocab_size": None}, "vocab_size"),
        (LLAMA, {"mlp_bias": "no"}, "mlp_bias"),
        (LLAMA, {"num_key_value_heads": 3}, "num_key_value_heads"),
        (LLAMA, {"num_attention_heads": 3, "num_key_value_heads": 3}, "num_attention_heads"),
        (LLAMA, {"hidden_act": "relu"}, "hidden_act"),
        (LLAMA, {"intermediate_size": None}, "intermediate_size"),
        (LLAMA, {"model_type": "mistral", "sliding_window": 8, "layer_types": []}, "layer_types"),
        (LLAMA, {**MOE, "num_experts_per_tok": 5}, "num_experts_per_tok"),
        (LLAMA, {**MOE, "mlp_only_layers": ["0"]}, "mlp_only_layers"),
        (GPT2, {"n_head": 5}, "n_head"),
        (BERT, {"num_attention_heads": 5}, "num_attention_heads"),
        (OPT, {"num_attention_heads": 5}, "num_attention_heads"),
        (OPT, {"word_embed_proj_dim": 32}, "word_embed_proj_dim"),
    ],
)
def test_a_bad_field_is_named(base, change, field):
    with pytest.raises(InvalidArchitecture, match=field):
        architecture_from_config({**base, **change})


def test_a_config_must_be_an_object():
    with pytest.raises(InvalidArchitecture, match="JSON object"):
        architecture_from_config([])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("base", "change", "field", "limit"),
    [
        (LLAMA, {"num_hidden_layers": 10**8}, "num_hidden_layers", 1024),
        (LLAMA, {"num_attention_heads": 10**8}, "num_attention_heads", 4096),
        (LLAMA, {"hidden_size": 10**8}, "hidden_size", 2**18),
        (LLAMA, {"vocab_size": 10**8}, "vocab_size", 2**21),
        (LLAMA, {**MOE, "num_local_experts": 10**8}, "num_local_experts", 2**14),
        (GPT2, {"n_layer": 1025}, "n_layer", 1024),
        (LLAMA, {"max_position_embeddings": 10**8 + 1}, "max_position_embeddings", 10**8),
    ],
)
def test_a_size_beyond_any_real_model_is_refused_naming_the_limit(base, change, field, limit):
    with pytest.raises(InvalidArchitecture, match=f"{field}.*and {limit}, got"):
        architecture_from_config({**base, **change})


def _moe_layers_one_by_one(config: dict[str, Any]) -> int:
    """The MoE layers counted layer by layer, as transformers' decoder layers decide."""
    layers = config["num_hidden_layers"]
    if "first_k_dense_replace" in config:
        first, freq = config["first_k_dense_replace"], config["moe_layer_freq"]
        return sum(1 for i in range(first, layers) if i % freq == 0)
    step, dense = config["decoder_sparse_step"], set(config["mlp_only_layers"])
    return sum(1 for i in range(layers) if i not in dense and (i + 1) % step == 0)


@settings(max_examples=300, deadline=None)
@given(
    layers=st.integers(1, 1024),
    every=st.integers(1, 1024),
    first=st.integers(0, 1024),
    dense=st.lists(st.integers(-5, 1100), max_size=20),
    deepseek=st.booleans(),
)
def test_moe_layers_are_counted_in_closed_form_as_layer_by_layer(
    layers, every, first, dense, deepseek
):
    config = {**LLAMA, **MOE, "num_hidden_layers": layers}
    if deepseek:
        config |= {"first_k_dense_replace": first, "moe_layer_freq": every}
    else:
        config |= {"decoder_sparse_step": every, "mlp_only_layers": dense}
    expected = _moe_layers_one_by_one(config)
    if expected < layers:  # the dense layers need the dense MLP's width
        config["intermediate_size"] = 128
    moe = architecture_from_config(config).moe
    assert moe is not None
    assert moe.moe_layers == expected


def test_the_largest_config_allowed_parses_at_once():
    config = {**LLAMA, **MOE, "num_hidden_layers": 1024, "num_attention_heads": 4096}
    config |= {"hidden_size": 2**18, "num_local_experts": 2**14, "decoder_sparse_step": 1}
    started = time.perf_counter()
    arch = architecture_from_config(config)
    assert arch.moe is not None
    assert arch.moe.moe_layers == 1024
    # microseconds in closed form; a loop over its 1024 layers' 2**14 experts (16 million
    # steps) takes seconds: a bound between the two that a loaded machine does not reach
    assert time.perf_counter() - started < 1
