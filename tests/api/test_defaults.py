"""Each default is declared once: the engine's dataclasses hold the workload defaults, the API
models read them, and the web form reads the API models. Pinned here, value by value."""

import json
from dataclasses import fields

import pytest
from pydantic import BaseModel

from app.engine import Dtype, Phase, TransformerSpec
from app.engine.compare import DEFAULT_THRESHOLD
from app.engine.training import DataParallelAlgorithm, Lora, Optimizer, Parallelism, Training
from app.schemas.kernel_bodies import CustomWorkload, ElementwiseWorkload
from app.schemas.measurement_bodies import MeasurementIn
from app.schemas.queries import ScalingQuery
from app.schemas.requests import CalculationRequest, ScalingRequest, TransformerFields
from app.settings import Settings
from app.web.forms import DEFAULTS

SPEC = TransformerSpec()


def test_the_engine_defaults_are_the_documented_ones():
    # docs/api.md lists these; vLLM's gpu_memory_utilization=0.9 leaves 0.1 in reserve
    assert (SPEC.phase, SPEC.batch, SPEC.seq_len, SPEC.gen_len) == (Phase.DECODE, 1, 2048, 256)
    assert SPEC.precision.compute is SPEC.precision.weights is SPEC.precision.kv is Dtype.BF16
    assert (SPEC.tp, SPEC.reserve_fraction, SPEC.flash_attention, SPEC.recompute) == (
        1,
        0.1,
        True,
        False,
    )
    parallel = Parallelism()
    assert (parallel.dp, parallel.pp, parallel.ep, parallel.cp, parallel.zero) == (1, 1, 1, 1, 0)
    assert parallel.chips_per_node == 8
    assert parallel.network_bandwidth == 400e9 / 8  # one 400 Gb/s NIC per chip, in bytes/s
    assert parallel.dp_algorithm is DataParallelAlgorithm.RING
    assert Training().optimizer is Optimizer.ADAMW
    assert DEFAULT_THRESHOLD == 0.1


def _api_default(name: str) -> object:
    return TransformerFields.model_fields[name].get_default(call_default_factory=True)


@pytest.mark.parametrize(
    ("field", "engine"),
    [
        ("phase", SPEC.phase),
        ("batch", SPEC.batch),
        ("seq_len", SPEC.seq_len),
        ("gen_len", SPEC.gen_len),
        ("tp", SPEC.tp),
        ("reserve_fraction", SPEC.reserve_fraction),
        ("flash_attention", SPEC.flash_attention),
        ("recompute", SPEC.recompute),
        ("optimizer", SPEC.training.optimizer),
        ("mfu", SPEC.training.mfu),
        ("train_tokens", SPEC.training.tokens),
        ("qlora", Lora().quantized_base),
        ("lora_targets", list(Lora().targets)),
        *[
            (f.name, getattr(Parallelism(), f.name))
            for f in fields(Parallelism)
            if f.name in TransformerFields.model_fields
        ],
    ],
)
def test_the_api_reads_the_engine_defaults(field, engine):
    assert _api_default(field) == engine


@pytest.mark.parametrize(
    ("form", "expected"),
    [
        ("batch", "1"),
        ("seq_len", "2048"),
        ("gen_len", "256"),
        ("dtype", ""),  # blank: each kind's API default (bf16 for models, fp32 for kernels)
        ("stack", "typical"),
        ("ceilings", "datasheet"),
        ("unit", "vector"),
        ("tp", "1"),
        ("phase", "decode"),
        ("optimizer", "adamw"),
        ("zero", "0"),
        ("cp", "1"),
        ("qlora", "false"),
        ("mfu", ""),
        ("chip_counts", "8,16,32,64,128"),
        ("serial_fraction", "0"),
        ("ops", "1"),
        ("inputs", "1"),
        ("fused", "true"),
    ],
)
def test_the_form_shows_the_api_defaults(form, expected):
    assert DEFAULTS[form] == expected


def test_the_form_and_the_api_agree_on_every_shared_field():
    shared: dict[str, type[BaseModel]] = {
        **{
            n: TransformerFields
            for n in TransformerFields.model_fields
            if n in DEFAULTS and n != "dtype"
        },
        "stack": CalculationRequest,
        "ceilings": CalculationRequest,
        "unit": CustomWorkload,
        "chip_counts": ScalingQuery,
        "serial_fraction": ScalingRequest,
        **dict.fromkeys(("ops", "inputs", "fused"), ElementwiseWorkload),
    }
    for name, model in shared.items():
        value = model.model_fields[name].get_default(call_default_factory=True)
        shown = "" if value is None else str(value).lower() if isinstance(value, bool) else value
        shown = f"{shown:g}" if isinstance(shown, float) else str(shown)
        assert DEFAULTS[name] == shown, name


def test_the_regression_threshold_is_declared_once():
    assert MeasurementIn.model_fields["regression_threshold"].default == DEFAULT_THRESHOLD


# --- a model's weights default to its checkpoint's format --------------------------------------

# gpt-oss-120b (param_counts, tested in tests/catalog/test_models.py): routed experts
# 114,701,598,720 parameters (36 layers x 128 experts x (2880 x 5760 + 2880 x 2880 + 8640
# biases)); attention and router 968,785,920; norms, biases and sinks 505,152; embedding and
# lm_head 579,133,440 each. Its checkpoint stores the experts in MXFP4 (4.25 bits: 0.53125 B)
# and the rest in bf16 (2 B):
#   0.53125 x 114,701,598,720 + 2 x (968,785,920 + 505,152 + 2 x 579,133,440)
#   = 60,935,224,320 + 4,255,115,904 = 65,190,340,224 B (65.2 GB; in bf16: 233.7 GB)
GPT_OSS_120B_WEIGHTS = 65_190_340_224


def test_gpt_oss_weights_default_to_its_mxfp4_checkpoint(client):
    body = client.get("/memory-fit", params={"chip": "h100", "model": "gpt-oss-120b"}).json()
    assert body["breakdown"]["weights"] == GPT_OSS_120B_WEIGHTS
    assert body["workload"]["weight_dtype"] == "mxfp4" and body["workload"]["dtype"] == "bf16"
    assert body["fits"] is True  # 65.2 GB of the H100's 85.5 GB less 10 % reserve
    assert any(
        line.startswith("weights mxfp4 by default: gpt-oss-120b's checkpoint")
        for line in body["assumptions"]
    )
    # the echo answers the same when sent back
    again = client.get(
        "/memory-fit",
        params={"chip": "h100", "model": "gpt-oss-120b", "weight_dtype": "mxfp4"},
    ).json()
    assert again["breakdown"]["weights"] == GPT_OSS_120B_WEIGHTS
    # weights asked in bf16: all of them, 116.8e9 parameters x 2 B, as before
    bf16 = client.get(
        "/memory-fit", params={"chip": "h100", "model": "gpt-oss-120b", "weight_dtype": "bf16"}
    ).json()
    assert bf16["breakdown"]["weights"] == 233_658_313_344 and bf16["fits"] is False


def test_deepseek_v3_weights_default_to_its_fp8_checkpoint(client):
    # DeepSeek-V3's checkpoint is fp8 for every linear weight of its blocks (experts,
    # attention, dense MLPs): 15,263,268,864 + 653,908,770,816 parameters at 1 B; norms
    # 1,021,440, embedding and lm_head 926,679,040 each at 2 B:
    # 669,172,039,680 + 3,708,759,040 = 672,880,798,720 B
    body = client.get("/memory-fit", params={"chip": "h100", "model": "deepseek-v3"}).json()
    assert body["workload"]["weight_dtype"] == "fp8"
    assert body["breakdown"]["weights"] == 672_880_798_720
    assert (
        "weights fp8 by default: DeepSeek-V3's checkpoint stores its blocks' linear weights in "
        "it; embeddings, lm_head and norms in the compute dtype (bf16)"
    ) in body["assumptions"]


@pytest.mark.parametrize("model", ["llama-3.1-8b", "llama-2-7b", "gemma-2-9b", "gpt2"])
def test_a_16_or_32_bit_checkpoint_leaves_the_weights_in_the_compute_dtype(client, model):
    # llama-2 ships fp16, gemma-2-9b and gpt2 fp32: weights are cast to the compute dtype
    body = client.get("/memory-fit", params={"chip": "h100", "model": model}).json()
    assert body["workload"]["weight_dtype"] == "bf16"
    assert not any("by default" in line for line in body["assumptions"])


def test_training_keeps_the_weights_in_the_compute_dtype(client):
    # training computes the gradients of the weights it holds: in bf16 (the experts
    # dequantised), so the checkpoint's format is no default there
    params = {"chip": "h100", "model": "gpt-oss-20b", "phase": "training", "seq_len": 128}
    body = client.get("/memory-fit", params=params).json()
    assert body["workload"]["weight_dtype"] == "bf16"


def test_an_inline_config_with_the_same_quantization_config_answers_the_same(client):
    models = json.loads(Settings().model_catalog.read_text())["models"]
    config = next(m["config"] for m in models if m["id"] == "gpt-oss-120b")
    body = client.post(
        "/memory-fit",
        json={"chip": "h100", "workload": {"kind": "transformer", "config": config}},
    ).json()
    assert body["breakdown"]["weights"] == GPT_OSS_120B_WEIGHTS


@pytest.mark.parametrize(
    "quantization",
    [
        {"quant_method": []},
        {"quant_method": "gptq", "bits": 4},
        {"quant_method": "gptq", "bits": 4, "group_size": 64},
        {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": False},
        "mxfp4",
        {"quant_method": None},
    ],
)
def test_a_quantization_config_the_engine_does_not_read_leaves_the_default(client, quantization):
    # only mxfp4, fp8 and 4-bit GPTQ or AWQ in groups of 128 with zero points are read;
    # anything else is the compute dtype, as before
    models = json.loads(Settings().model_catalog.read_text())["models"]
    config = next(m["config"] for m in models if m["id"] == "gpt-oss-120b")
    workload = {"kind": "transformer", "config": {**config, "quantization_config": quantization}}
    body = client.post("/memory-fit", json={"chip": "h100", "workload": workload}).json()
    assert body["workload"]["weight_dtype"] == "bf16"
    assert body["breakdown"]["weights"] == 233_658_313_344


@pytest.mark.parametrize(
    "quantization",
    [
        {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True},
        {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
    ],
)
def test_a_gptq_or_awq_checkpoint_defaults_to_its_groups_of_128(client, quantization):
    # Llama 3.1 8B stored as GPTQ or AWQ: its blocks' 6,979,321,856 linear weights at 4.15625
    # bits (int4-g128: an fp16 scale and a 4-bit zero per 128) = 3,625,975,808 B; embeddings,
    # lm_head (525,336,576 each) and norms (266,240) at 2 B = 2,101,878,784 B: 5,727,854,592
    models = json.loads(Settings().model_catalog.read_text())["models"]
    config = next(m["config"] for m in models if m["id"] == "llama-3.1-8b")
    workload = {"kind": "transformer", "config": {**config, "quantization_config": quantization}}
    body = client.post("/memory-fit", json={"chip": "h100", "workload": workload}).json()
    assert body["workload"]["weight_dtype"] == "int4-g128"
    assert body["breakdown"]["weights"] == 5_727_854_592
    # the format stores weights; it is no compute dtype: no chip has a peak for it
    params = {"chip": "h100", "model": "llama-8b", "dtype": "int4-g128"}
    answer = client.get("/expected-time", params=params)
    assert answer.status_code == 422
    assert "no published int4-g128 matrix peak" in answer.text
