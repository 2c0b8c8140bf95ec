"""The model catalog: derived parameter counts against the official ones, names, configs."""

import json

import pytest

from app.catalog.loader import CatalogError, load_model_catalog
from app.engine import param_counts
from app.settings import Settings

CATALOG = load_model_catalog(Settings().model_catalog)


@pytest.mark.parametrize("model_id", sorted(CATALOG.models))
def test_derived_parameter_counts_match_the_official_ones_within_2_percent(model_id):
    record = CATALOG.models[model_id]
    counts = param_counts(record.arch)
    official = record.entry.official_params
    assert counts.total == pytest.approx(official.total, rel=0.02)
    if official.active is not None:
        # gpt-oss's model card leaves the input embedding out of "active"
        embedding = 0 if official.active_counts_input_embedding else counts.embedding
        assert counts.active - embedding == pytest.approx(official.active, rel=0.02)
    assert official.source["url"].startswith("http")


@pytest.mark.parametrize(
    ("model_id", "total"),
    [
        # exact counts from the architecture (see docs/formulas.md#architectures-and-parameters)
        ("llama-3.1-8b", 8_030_261_248),
        ("llama-2-7b", 6_738_415_616),
        ("gpt2", 124_439_808),
        ("bert-base-uncased", 109_482_240),
        ("gemma-2-9b", 9_241_705_984),
        ("qwen2.5-7b", 7_615_616_512),
        ("deepseek-v3", 671_026_419_200),
        ("mixtral-8x7b", 46_702_792_704),
    ],
)
def test_exact_counts_of_worked_architectures(model_id, total):
    assert param_counts(CATALOG.models[model_id].arch).total == total


def test_family_quirks_are_applied():
    att = {m: CATALOG.models[m].arch.attention for m in ("qwen2.5-7b", "qwen3-8b", "gpt-oss-20b")}
    assert att["qwen2.5-7b"].qkv_bias  # Qwen2Attention hard-codes q/k/v biases
    assert att["qwen3-8b"].qk_norm
    assert att["gpt-oss-20b"].sinks and att["gpt-oss-20b"].sliding_layers == 12
    assert CATALOG.models["gemma-2-9b"].arch.norms_per_layer == 4
    moe = CATALOG.models["deepseek-v3"].arch.moe
    assert moe is not None and moe.moe_layers == 58  # layers 3..60


def test_names_resolve_case_insensitively_and_by_hf_repo():
    assert CATALOG.resolve("LLAMA-8B").entry.id == "llama-3.1-8b"
    assert CATALOG.resolve("meta-llama/Llama-3.1-8B").entry.id == "llama-3.1-8b"
    assert CATALOG.resolve("mistral_7b").entry.id == "mistral-7b-v0.1"


# the published checkpoints' dtypes: gpt-oss's MoE weights in MXFP4 (its config's
# quantization_config), DeepSeek-V3's linear weights in fp8, GPT-2 and BERT in fp32, GPT-3
# none published; every other config's torch_dtype
CHECKPOINTS = {
    "gpt-oss-20b": "mxfp4",
    "gpt-oss-120b": "mxfp4",
    "deepseek-v3": "fp8",
    "gpt2": "fp32",
    "gpt2-xl": "fp32",
    "bert-base-uncased": "fp32",
    "gemma-2-9b": "fp32",
    "gpt3-175b": None,
    **dict.fromkeys(["llama-2-7b", "llama-2-13b", "llama-2-70b", "opt-66b"], "fp16"),
}


@pytest.mark.parametrize("model_id", sorted(CATALOG.models))
def test_every_model_carries_its_checkpoint_dtype_with_a_source(model_id):
    checkpoint = CATALOG.models[model_id].entry.checkpoint
    assert checkpoint.dtype == CHECKPOINTS.get(model_id, "bf16")
    assert checkpoint.source["url"].startswith("https://") and checkpoint.source["note"]


def test_a_quantised_checkpoint_is_read_from_its_config():
    # gpt-oss leaves attention, router, embeddings and lm_head unconverted: experts only
    gpt_oss = CATALOG.models["gpt-oss-120b"].arch.quantised
    assert gpt_oss is not None and (gpt_oss.dtype, gpt_oss.experts_only) == ("mxfp4", True)
    deepseek = CATALOG.models["deepseek-v3"].arch.quantised
    assert deepseek is not None and (deepseek.dtype, deepseek.experts_only) == ("fp8", False)
    assert CATALOG.models["llama-3.1-8b"].arch.quantised is None


def test_a_checkpoint_dtype_its_config_contradicts_stops_the_catalog(tmp_path):
    data = json.loads(Settings().model_catalog.read_text())
    entry = next(m for m in data["models"] if m["id"] == "gpt-oss-20b")
    entry["checkpoint"]["dtype"] = "bf16"
    path = tmp_path / "models.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CatalogError, match=r"model gpt-oss-20b: checkpoint\.dtype bf16 is not"):
        load_model_catalog(path)
