"""A Hugging Face config that is incomplete or inconsistent is refused, naming its field."""

from typing import Any

import pytest

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
