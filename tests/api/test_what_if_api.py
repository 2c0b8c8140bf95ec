"""what_if=true through the ASGI app: the same work with each change that applies, each
estimated anew, best realistic speed-up first; and /check's advice on the work itself."""

import math
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from app import formatting as fmt

DECODE = {"chip": "h100", "model": "llama-3.1-8b", "seq_len": 2048}
ITEM_FIELDS = {"change", "key", "expected_time_s", "realistic_time_s", "speedup"}
ITEM_FIELDS |= {"work_scale", "fits"}


def _what_if(client: TestClient, path: str = "/expected-time", **body: Any) -> dict[str, Any]:
    response = client.post(path, json={"what_if": True, **body})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def _keys(answer: dict[str, Any]) -> list[str]:
    return [item["key"] for item in answer["what_if"]]


def _matmul(dtype: str = "fp32", **sizes: int) -> dict[str, Any]:
    return {"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "dtype": dtype, **sizes}


# --- the field --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/expected-time", "/check"])
def test_without_the_flag_there_is_no_what_if(client, path):
    measured = {"measured_ms": 10} if path == "/check" else {}
    assert client.get(path, params={**DECODE, **measured}).json()["what_if"] is None
    posted = client.post(path, json={"chip": "h100", "workload": _matmul(), **measured})
    assert posted.json()["what_if"] is None
    off = client.get(path, params={**DECODE, **measured, "what_if": "false"})
    assert off.json()["what_if"] is None


def test_get_and_post_give_the_same_items(client):
    got = client.get("/expected-time", params={**DECODE, "what_if": "true"}).json()
    workload = {"kind": "transformer", "model": "llama-3.1-8b", "seq_len": 2048}
    posted = _what_if(client, chip="h100", workload=workload)
    assert got["what_if"] == posted["what_if"]
    assert all(set(item) == ITEM_FIELDS for item in got["what_if"])


def test_a_flag_that_is_not_a_boolean_is_named(client):
    response = client.get("/expected-time", params={**DECODE, "what_if": "maybe"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "what_if"]


def test_the_schema_publishes_the_flag_for_get_and_post(client):
    schema = client.get("/openapi.json").json()
    for path in ("/expected-time", "/check"):
        params = {p["name"]: p for p in schema["paths"][path]["get"]["parameters"]}
        assert params["what_if"]["schema"]["type"] == "boolean"
        assert params["what_if"]["schema"]["default"] is False
    body = schema["components"]["schemas"]["CalculationRequest"]["properties"]["what_if"]
    assert body["type"] == "boolean" and body["default"] is False
    item = schema["components"]["schemas"]["WhatIfOut"]
    assert set(item["properties"]) == ITEM_FIELDS
    assert "the same amount of work" in item["properties"]["speedup"]["description"]


# --- worked examples ----------------------------------------------------------------------------


def test_a_memory_bound_decode_step_with_narrower_weights_and_cache(client):
    # Llama 3.1 8B decoding one sequence after 2,048 tokens on an H100 (3.35 TB/s), in bf16:
    # the blocks' linear weights per layer are q 4096^2 + k, v 2 x 4096 x 1024 + o 4096^2 +
    # gate, up, down 3 x 4096 x 14336 = 218,103,808 parameters; x 32 layers x 2 B =
    # 13,958,643,712 B. The LM head 128,256 x 4096 x 2 B = 1,050,673,152 B and the norms
    # (2 x 32 + 1) x 4096 x 2 B = 532,480 B stay in bf16. The KV cache read and written:
    # 2,049 tokens x 2 (K, V) x 32 layers x 8 heads x 128 x 2 B = 268,566,528 B.
    # Total 15,278,415,872 B: memory-bound (16 µs of compute), ideal = bytes / 3.35e12.
    answer = client.get("/expected-time", params={**DECODE, "what_if": "true"}).json()
    assert answer["bytes"] == 15_278_415_872
    items = {item["key"]: item for item in answer["what_if"]}
    assert set(items) == {"optimal_batch", "weights_int4", "weights_int8", "tp_x2", "kv_fp8"}
    # int8 halves the block weights: 15,278,415,872 - 6,979,321,856 = 8,299,094,016 B
    assert items["weights_int8"]["expected_time_s"] == pytest.approx(8_299_094_016 / 3.35e12)
    # int4 in AWQ's and GPTQ's groups of 128 (an fp16 scale and a 4-bit zero each) stores
    # them in 6,979,321,856 x 0.51953125 = 3,625,975,808 B: 15,278,415,872 - 13,958,643,712
    # + 3,625,975,808 = 4,945,747,968 B
    assert items["weights_int4"]["expected_time_s"] == pytest.approx(4_945_747_968 / 3.35e12)
    assert items["weights_int4"]["change"] == "weights in int4-g128 (weight-only quantisation)"
    # an fp8 cache halves the 268,566,528 B: 15,144,132,608 B
    assert items["kv_fp8"]["expected_time_s"] == pytest.approx(15_144_132_608 / 3.35e12)
    assert items["weights_int8"]["change"] == "weights in int8 (weight-only quantisation)"
    assert all(item["fits"] for item in items.values())
    # ranked: the optimal batch (per token) first, then int4, int8, tp x2, the fp8 cache
    assert _keys(answer) == ["optimal_batch", "weights_int4", "weights_int8", "tp_x2", "kv_fp8"]
    speedups = [item["speedup"] for item in answer["what_if"]]
    assert speedups == sorted(speedups, reverse=True)


def test_the_optimal_batch_is_compared_per_token(client):
    # the optimal batch of /optimal-batch; its step serves work_scale times the tokens, so its
    # speed-up is the answer's realistic time per token over the item's
    answer = client.get("/expected-time", params={**DECODE, "what_if": "true"}).json()
    best = client.get("/optimal-batch", params=DECODE).json()["optimal_batch"]
    item = answer["what_if"][0]
    assert item["key"] == "optimal_batch" and item["work_scale"] == best
    per_token = item["realistic_time_s"] / best
    assert item["speedup"] == pytest.approx(answer["realistic_time_s"] / per_token)
    assert item["change"].startswith(f"batch {best} instead of 1")


def test_an_fp32_matmul_on_h100_gains_tf32_and_bf16(client):
    # 4096^3 fp32 runs at the fp32 vector peak (67 TFLOP/s, no fp32 matrix path): 2 x 4096^3
    # = 137,438,953,472 FLOPs, 2.05 ms; TF32 (494.7 TFLOP/s) 0.278 ms; bf16 (989.4) 0.139 ms
    answer = _what_if(client, chip="h100", workload=_matmul())
    items = {item["key"]: item for item in answer["what_if"]}
    assert _keys(answer) == ["dtype_bf16", "matmul_tf32"]
    assert items["matmul_tf32"]["expected_time_s"] == pytest.approx(137_438_953_472 / 494.7e12)
    assert items["dtype_bf16"]["expected_time_s"] == pytest.approx(137_438_953_472 / 989.4e12)
    assert all(item["fits"] is None and item["work_scale"] == 1 for item in items.values())


def test_an_unfused_chain_gains_fusion(client):
    # 4 fp32 ops over 10^8 elements on an H100: unfused 2 x 4 x 10^8 x 4 B = 3.2 GB, fused
    # 2 x 10^8 x 4 B = 0.8 GB: ideal 0.8e9 / 3.35e12 = 239 µs. In bf16, still unfused, half
    # the bytes: 1.6 GB, 478 µs
    workload = {"kind": "elementwise", "n": 10**8, "ops": 4, "fused": False}
    answer = _what_if(client, chip="h100", workload=workload)
    assert _keys(answer) == ["fused", "dtype_bf16"]
    items = {item["key"]: item for item in answer["what_if"]}
    assert items["fused"]["expected_time_s"] == pytest.approx(0.8e9 / 3.35e12)
    assert items["dtype_bf16"]["expected_time_s"] == pytest.approx(1.6e9 / 3.35e12)


# --- fp32 work in 16 bits ---------------------------------------------------------------------


def test_an_fp32_chain_gains_bf16_half_the_bytes(client):
    # a fused chain over 10^8 fp32 elements on an H100: 0.8 GB, 239 µs; in bf16 0.4 GB, 119 µs
    answer = _what_if(client, chip="h100", workload={"kind": "elementwise", "n": 10**8})
    assert _keys(answer) == ["dtype_bf16"]
    item = answer["what_if"][0]
    assert item["change"] == "tensors in bf16 instead of fp32 (half the bytes)"
    assert item["expected_time_s"] == pytest.approx(0.4e9 / 3.35e12)
    assert item["speedup"] > 1


@pytest.mark.parametrize(
    ("workload", "fp32_bytes"),
    [
        # y = a x + y: x and y read, y written: 3 x 10^8 x 4 B
        ({"kind": "saxpy", "n": 10**8}, 1.2e9),
        # a softmax over 10^4 rows of 10^4: read and written once, 2 x 10^8 x 4 B
        ({"kind": "softmax", "rows": 10**4, "cols": 10**4}, 0.8e9),
    ],
)
def test_other_fp32_pointwise_work_gains_bf16(client, workload, fp32_bytes):
    answer = _what_if(client, chip="h100", workload=workload)
    assert answer["bytes"] == fp32_bytes
    item = {i["key"]: i for i in answer["what_if"]}["dtype_bf16"]
    assert item["expected_time_s"] == pytest.approx(fp32_bytes / 2 / 3.35e12)


def test_fp32_attention_gains_bf16_operands(client):
    # fused attention in fp32 runs at the H100's 67 TFLOP/s fp32 rate; its bf16 operands at
    # the 989.4 TFLOP/s matrix peak: the changed request's answer
    workload = {"kind": "attention", "heads": 32, "q_len": 4096, "head_dim": 128}
    answer = _what_if(client, chip="h100", workload=workload | {"dtype": "fp32"})
    item = {i["key"]: i for i in answer["what_if"]}["dtype_bf16"]
    assert item["change"] == "operands in bf16 instead of fp32"
    bf16 = client.post("/expected-time", json={"chip": "h100", "workload": workload}).json()
    assert item["expected_time_s"] == pytest.approx(bf16["expected_time_s"])


def test_a_chip_without_bf16_is_offered_fp16(client):
    # the V100 lists fp16 (vector and matrix) and no bf16: the fp32 chain halves in fp16;
    # 10^8 elements read and written, 0.4 GB at 900 GB/s
    answer = _what_if(client, chip="v100", workload={"kind": "elementwise", "n": 10**8})
    assert _keys(answer) == ["dtype_fp16"]
    assert answer["what_if"][0]["change"] == "tensors in fp16 instead of fp32 (half the bytes)"
    assert answer["what_if"][0]["expected_time_s"] == pytest.approx(0.4e9 / 900e9)
    # and the fp32 matmul on its fp16 tensor cores: 2 x 4096^3 at 125 TFLOP/s
    matmul = {i["key"]: i for i in _what_if(client, chip="v100", workload=_matmul())["what_if"]}
    assert matmul["dtype_fp16"]["expected_time_s"] == pytest.approx(137_438_953_472 / 125e12)


FP32_LLAMA = {"kind": "transformer", "model": "llama-3.1-8b", "dtype": "fp32", "seq_len": 2048}


def _at_dtype(client, chip, workload, dtype):
    body = {"chip": chip, "workload": workload | {"dtype": dtype}}
    return client.post("/expected-time", json=body).json()


def test_an_fp32_prefill_gains_bf16_and_tf32(client):
    # compute-bound: fp32 runs at the H100's 67 TFLOP/s vector peak; TF32 on the matrix unit
    # at 494.7 (7.38x), bf16 at 989.4 (and half the bytes)
    workload = FP32_LLAMA | {"phase": "prefill"}
    answer = _what_if(client, chip="h100", workload=workload)
    assert answer["bound"] == "compute"
    items = {item["key"]: item for item in answer["what_if"]}
    assert items["matmul_tf32"]["change"] == "TF32 on the matrix unit for the fp32 matmuls"
    assert items["matmul_tf32"]["expected_time_s"] == pytest.approx(
        answer["expected_time_s"] * 67 / 494.7, rel=1e-3
    )
    assert items["dtype_bf16"]["change"] == (
        "in bf16 instead of fp32 (the compute, the weights and the KV cache)"
    )
    # each the answer that the changed request gives
    for key, dtype in (("matmul_tf32", "tf32"), ("dtype_bf16", "bf16")):
        changed = _at_dtype(client, "h100", workload, dtype)
        assert items[key]["expected_time_s"] == pytest.approx(changed["expected_time_s"])
        assert items[key]["realistic_time_s"] == pytest.approx(changed["realistic_time_s"])
    assert _keys(answer).index("dtype_bf16") < _keys(answer).index("matmul_tf32")


def test_an_fp32_decode_step_gains_bf16_but_not_tf32(client):
    # memory-bound: TF32 moves the same bytes, so it is not offered; bf16 halves them all
    answer = _what_if(client, chip="h100", workload=FP32_LLAMA)
    assert answer["bound"] == "memory"
    keys = _keys(answer)
    assert "dtype_bf16" in keys and "matmul_tf32" not in keys
    item = {i["key"]: i for i in answer["what_if"]}["dtype_bf16"]
    assert item["expected_time_s"] == pytest.approx(answer["expected_time_s"] / 2, rel=1e-3)
    bf16 = _at_dtype(client, "h100", FP32_LLAMA, "bf16")
    assert item["expected_time_s"] == pytest.approx(bf16["expected_time_s"])


def test_narrower_weights_stay_narrow_in_bf16(client):
    # int8 weights and an fp32 compute: bf16 narrows the compute and the cache, not the
    # weights (the same request with dtype bf16, weight_dtype int8)
    workload = FP32_LLAMA | {"weight_dtype": "int8"}
    answer = _what_if(client, chip="h100", workload=workload)
    item = {i["key"]: i for i in answer["what_if"]}["dtype_bf16"]
    assert item["change"] == "in bf16 instead of fp32 (the compute and the KV cache)"
    bf16 = _at_dtype(client, "h100", workload, "bf16")
    assert bf16["workload"]["weight_dtype"] == "int8"
    assert item["expected_time_s"] == pytest.approx(bf16["expected_time_s"])
    # with an fp8 cache too, only the compute narrows
    fp8_kv = _what_if(client, chip="h100", workload=workload | {"kv_dtype": "fp8"})
    item = {i["key"]: i for i in fp8_kv["what_if"]}["dtype_bf16"]
    assert item["change"] == "in bf16 instead of fp32 (the compute)"


def test_an_fp32_model_on_a_v100_is_offered_fp16_and_no_tf32(client):
    # no TF32 and no bf16 on a V100; fp16 on its tensor cores
    answer = _what_if(client, chip="v100", workload=FP32_LLAMA | {"phase": "prefill"})
    keys = _keys(answer)
    assert "dtype_fp16" in keys and not {"dtype_bf16", "matmul_tf32"} & set(keys)


def test_a_compiled_stack_changes_the_realistic_time_only(client):
    # a decode step at batch 1: eager PyTorch dispatches each of its kernels from the host,
    # a compiled stack replays them from a CUDA graph
    workload = {"kind": "transformer", "model": "llama-3.1-8b", "phase": "decode", "batch": 1}
    answer = _what_if(client, chip="a100", stack="eager", workload=workload)
    item = {i["key"]: i for i in answer["what_if"]}["stack_compiled"]
    assert item["expected_time_s"] == answer["expected_time_s"]
    assert item["realistic_time_s"] < answer["realistic_time_s"]
    assert item["change"] == "compiled (torch.compile, CUDA graphs) instead of eager"


def test_an_operator_list_gains_one_kernel(client):
    # two memory-bound pointwise ops (neg: one FLOP an element), which fusing speeds up
    neg = {
        "name": "aten::neg",
        "inputs": [{"shape": [1000, 1000]}],
        "outputs": [{"shape": [1000, 1000]}],
    }
    answer = _what_if(
        client, chip="a100", stack="eager", workload={"kind": "ops", "ops": [neg, neg]}
    )
    assert set(_keys(answer)) == {"fused", "stack_compiled"}
    fused = {i["key"]: i for i in answer["what_if"]}["fused"]
    assert fused["expected_time_s"] < answer["expected_time_s"]


# a training step on 8 replicas of 2 pipeline stages, micro-batches of 4 sequences (2 per
# replica and step), the data-parallel collective not overlapped, recomputation on
TRAINING_PP2 = {
    "kind": "transformer",
    "model": "llama-3.1-8b",
    "phase": "training",
    "batch": 64,
    "dp": 8,
    "pp": 2,
    "micro_batch": 4,
    "overlap": False,
    "recompute": True,
}


def test_training_options(client):
    # pp=2 with micro-batches of 4: halving them doubles the micro-batches and shrinks the
    # bubble; overlap off and ZeRO 0 over 8 replicas; recomputation on (turning it off would
    # not fit, so it is left out)
    workload = TRAINING_PP2
    answer = _what_if(client, chip="h100", workload=workload)
    keys = _keys(answer)
    assert {"micro_batches_x2", "overlap_on", "zero_1", "tp_x2"} <= set(keys)
    assert not {"weights_int8", "weights_int4", "kv_fp8", "optimal_batch"} & set(keys)
    micro = {i["key"]: i for i in answer["what_if"]}["micro_batches_x2"]
    assert micro["change"].startswith("4 micro-batches of 2 instead of 2 of 4")
    assert micro["speedup"] > 1


# --- what must not appear -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chip", "workload", "absent"),
    [
        # a matmul has no KV cache, no weights to quantise, no batch of sequences
        ("h100", _matmul(), {"kv_fp8", "weights_int8", "weights_int4", "optimal_batch", "tp_x2"}),
        # a bf16 matmul has no TF32 and no bf16 to move to
        ("h100", _matmul("bf16"), {"matmul_tf32", "dtype_bf16"}),
        # the A100 has no fp8: no fp8 operands, no fp8 KV cache
        ("a100", _matmul("bf16"), {"dtype_fp8"}),
        ("a100", {"kind": "transformer", "model": "llama-3.1-8b"}, {"kv_fp8"}),
        # a V100 has no TF32 and no bf16 matrix peak
        ("v100", _matmul(), {"matmul_tf32", "dtype_bf16"}),
        # a typical (graphed) stack has nothing to compile; a fused chain nothing to fuse
        ("h100", {"kind": "elementwise", "n": 1000}, {"stack_compiled", "fused"}),
        # int8 weights are not offered again, nor an fp8 cache that is already fp8
        (
            "h100",
            {
                "kind": "transformer",
                "model": "llama-3.1-8b",
                "weight_dtype": "int8",
                "kv_dtype": "fp8",
            },
            {"weights_int8", "kv_fp8"},
        ),
    ],
)
def test_changes_that_do_not_apply_are_not_listed(client, chip, workload, absent):
    assert not absent & set(_keys(_what_if(client, chip=chip, workload=workload)))


def test_a_bf16_matmul_on_h100_gains_fp8(client):
    # 4096^3 at bf16 989.4 TFLOP/s against fp8's 1,978.9: compute-bound, half the time
    answer = _what_if(client, chip="h100", workload=_matmul("bf16"))
    assert _keys(answer) == ["dtype_fp8"]
    assert answer["what_if"][0]["expected_time_s"] == pytest.approx(137_438_953_472 / 1978.9e12)


# --- invariants -----------------------------------------------------------------------------------

_WORKLOADS = st.one_of(
    st.fixed_dictionaries(
        {
            "kind": st.just("transformer"),
            "model": st.sampled_from(["llama-3.1-8b", "mixtral-8x7b"]),
            "phase": st.sampled_from(["decode", "prefill", "generate"]),
            "batch": st.integers(1, 64),
            "seq_len": st.integers(1, 8192),
            "gen_len": st.integers(1, 64),
        }
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("matmul"),
            "m": st.integers(1, 10**4),
            "n": st.integers(1, 10**4),
            "k": st.integers(1, 10**4),
            "dtype": st.sampled_from(["fp32", "bf16", "fp16"]),
            "allow_tf32": st.booleans(),
        }
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("elementwise"),
            "n": st.integers(1, 10**9),
            "ops": st.integers(1, 8),
            "fused": st.booleans(),
        }
    ),
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    workload=_WORKLOADS,
    chip=st.sampled_from(["h100", "a100", "v100", "mi300x"]),
    stack=st.sampled_from(["typical", "eager"]),
)
def test_every_item_is_a_positive_time_and_its_speedup_is_per_unit_of_work(
    client: TestClient, workload: dict[str, Any], chip: str, stack: str
) -> None:
    response = client.post(
        "/expected-time", json={"chip": chip, "stack": stack, "what_if": True, "workload": workload}
    )
    assume(response.status_code != 422)  # e.g. bf16 on a chip without a bf16 matrix peak
    answer = response.json()
    speedups = []
    for item in answer["what_if"]:
        assert 0 < item["expected_time_s"] <= item["realistic_time_s"] < math.inf
        per_unit = item["realistic_time_s"] / item["work_scale"]
        assert item["speedup"] == pytest.approx(answer["realistic_time_s"] / per_unit)
        speedups.append(item["speedup"])
    assert speedups == sorted(speedups, reverse=True)
    assert len(set(_keys(answer))) == len(answer["what_if"])


# --- advice ---------------------------------------------------------------------------------------

_SCIENTIFIC = re.compile(r"\d[eE][-+]?\d|\d\.\d{6,}")


def _advice(
    client: TestClient, chip: str, workload: dict[str, Any], ms: float, **extra: Any
) -> list[str]:
    body = {"chip": chip, "workload": workload, "measured_ms": ms, **extra}
    answer = client.post("/check", json=body).json()
    assert not any(_SCIENTIFIC.search(line) for line in answer["advice"]), answer["advice"]
    advice: list[str] = answer["advice"]
    return advice


def test_a_slow_gemm_is_told_its_tiles_and_dtypes(client):
    # 1000 x 1000 output: ceil(1000/128)^2 = 64 tiles of 128 x 128, 10^6 / (64 x 16,384) =
    # 95.4% output (no tile line under 90%), but 64 of the H100's 132 SMs: 48.5% busy.
    # fp32 at 67 TFLOP/s; TF32 494.7 (7.38x), bf16 989.4 (14.8x). Ideal 2 x 10^9 x 4096 /
    # 67e12 = 122 µs; measured 1 ms is 8.2x: room to improve
    advice = _advice(client, "h100", _matmul(m=1000, n=1000), 1.0)
    assert advice[0] == "At 8.2x the roofline time, compute-bound: there is room to improve."
    assert not any("Common gaps" in line for line in advice)
    assert advice[2] == (
        "Wave quantisation: 64 tiles keep 64 of the 132 compute units busy (48.5%): a larger "
        "output (batch several products into one) or a split-K kernel fills the chip."
    )
    assert advice[3].startswith(
        "In tf32 (torch.backends.cuda.matmul.allow_tf32) the matrix peak is 495 TFLOP/s, 7.38x "
        "the 67 TFLOP/s this fp32 matmul runs at"
    )
    assert advice[4].startswith("In bf16 the matrix peak is 989 TFLOP/s, 14.8x")


def test_a_gemm_of_awkward_sizes_is_told_its_tile_quantisation(client):
    # 130 x 130: 2 x 2 = 4 tiles, 16,900 / 65,536 = 25.8% of them output
    advice = _advice(client, "h100", _matmul("bf16", m=130, n=130, k=130), 0.05)
    assert any(
        line.startswith(
            "Tile quantisation: the output is cut into 4 tiles of 128 x 128, only 25.8%"
        )
        for line in advice
    ), advice


def test_an_unfused_chain_is_told_its_fused_time(client):
    # unfused 3.2 GB / 3.35 TB/s = 955 µs ideal; fused 0.8 GB: 239 µs. 3 ms is 3.1x
    workload = {"kind": "elementwise", "n": 10**8, "ops": 4, "fused": False}
    advice = _advice(client, "h100", workload, 3.0)
    assert (
        "Each of the 4 ops is its own kernel, writing its result for the next to read back: "
        "fused into one (torch.compile, a hand-written kernel) the chain takes 239 µs ideally "
        "instead of 955 µs."
    ) in advice


def test_a_fused_fp32_chain_is_told_bf16_halves_its_bytes(client):
    # fused cos over 10^8 fp32: 0.8 GB, 239 µs ideal; 1 ms is 4.2x
    advice = _advice(client, "h100", {"kind": "elementwise", "n": 10**8}, 1.0)
    assert (
        "The chain is memory-bound on its fp32 tensors: in bf16 it moves half the bytes." in advice
    )
    assert not any("own kernel" in line for line in advice)


def test_a_slow_decode_step_is_told_its_batch_weights_and_cache(client):
    # the decode step of the worked example: 4.56 ms ideal, 30 ms measured is 6.6x. The
    # weights are 15,009,849,344 of 15,278,415,872 B (98.2%), the cache 268,566,528 (1.76%);
    # intensity 2 x 8.03e9 FLOPs / 15.3 GB = 1.05 FLOP/B against 989.4e12 / 3.35e12 = 295
    workload = {"kind": "transformer", "model": "llama-3.1-8b", "seq_len": 2048}
    advice = _advice(client, "h100", workload, 30)
    assert advice[2].startswith(
        "At batch 1 each step reads all the weights for one sequence: 1.05 FLOP/B against the "
        "chip's ridge of 295"
    )
    assert advice[3].startswith("The weights are 98.2% of the bytes a step moves, in bf16")
    assert advice[4] == "The KV cache is 1.76% of them, in bf16: an fp8 KV cache cuts it to 1/2."
    # no fp8 on an A100: no fp8 cache advised
    assert not any("fp8" in line for line in _advice(client, "a100", workload, 30))


def test_a_slow_training_step_is_told_its_overlap_bubble_and_recomputation(client):
    workload = TRAINING_PP2
    advice = _advice(client, "h100", workload, 3000)
    text = "\n".join(advice)
    assert "exposed: overlap it with the backward pass (overlap=true" in text
    # 2 micro-batches over 2 stages: (2-1)/(2+2-1) = 33.3% idle; 4: 1/5 = 20%
    assert (
        "At 2 micro-batches over 2 pipeline stages the pipeline idles 33.3% of the step: 4 "
        "micro-batches would cut it to 20%."
    ) in advice
    assert "Full activation recomputation runs the forward pass twice" in text


def test_with_what_if_the_advice_cites_the_best_change(client):
    workload = {"kind": "transformer", "model": "llama-3.1-8b", "seq_len": 2048}
    body = {"chip": "h100", "workload": workload, "measured_ms": 30, "what_if": True}
    answer = client.post("/check", json=body).json()
    best = answer["what_if"][0]
    line = (
        f"{best['change']}: {fmt.number(best['speedup'])}x faster (realistic "
        f"{fmt.seconds(answer['realistic_time_s'])} -> "
        f"{fmt.seconds(best['realistic_time_s'] / best['work_scale'])} for the same tokens)."
    )
    assert answer["advice"][2] == line
    # without what_if, no change is cited
    plain = _advice(client, "h100", workload, 30)
    assert not any("faster (realistic" in line for line in plain)


def test_the_best_change_with_its_numbers(client):
    # the fp32 matmul of above, 4096^3 on an H100: bf16 first; its realistic times, formatted
    answer = client.post(
        "/check",
        json={"chip": "h100", "workload": _matmul(), "measured_ms": 10, "what_if": True},
    ).json()
    best = answer["what_if"][0]
    assert best["key"] == "dtype_bf16"
    assert (
        f"operands in bf16 instead of fp32: {fmt.number(best['speedup'])}x faster (realistic "
        f"{fmt.seconds(answer['realistic_time_s'])} -> {fmt.seconds(best['realistic_time_s'])})."
    ) in answer["advice"]


def test_where_the_work_does_not_fit_every_change_is_kept_with_its_fit(client):
    # Llama 3.1 70B in bf16 on one H100: 141 GB of weights alone, over 80 GB. int4 weights
    # (about 35 GB of blocks) fit; an fp8 KV cache or the LM head alone do not make it fit
    answer = client.get(
        "/expected-time", params={"chip": "h100", "model": "llama-3.1-70b", "what_if": "true"}
    ).json()
    assert answer["fits"] is False
    fits = {item["key"]: item["fits"] for item in answer["what_if"]}
    assert fits["weights_int4"] is True and fits["kv_fp8"] is False


def test_where_the_work_fits_a_change_that_would_not_is_left_out(client):
    # the training step of test_training_options fits with recomputation, not without it
    # (/memory-fit says so): recompute_off is not offered
    params = {
        "chip": "h100",
        "model": "llama-3.1-8b",
        "phase": "training",
        "batch": 64,
        "dp": 8,
        "pp": 2,
        "micro_batch": 4,
        "overlap": "false",
    }
    assert (
        client.get("/memory-fit", params={**params, "recompute": "false"}).json()["fits"] is False
    )
    answer = client.get(
        "/expected-time", params={**params, "recompute": "true", "what_if": "true"}
    ).json()
    assert answer["fits"] is True
    assert "recompute_off" not in _keys(answer)
    assert all(item["fits"] for item in answer["what_if"])


def test_quantisation_advice_says_how_far_the_bytes_shrink_from_the_weights_dtype(client):
    # fp32 weights (4 B) to int8 (1 B) is a quarter, to int4 (0.5 B) an eighth; bf16 halves
    workload = {"kind": "transformer", "model": "llama-3.1-8b", "seq_len": 2048, "dtype": "fp32"}
    advice = _advice(client, "h100", workload, 300)
    assert any(
        "in fp32: weight-only quantisation (AWQ, GPTQ) to int8 cuts them to 1/4, to int4 "
        "to 1/8." in line
        for line in advice
    )
    bf16 = _advice(client, "h100", {**workload, "dtype": "bf16"}, 30)
    assert any("to int8 cuts them to 1/2, to int4 to 1/4." in line for line in bf16)
