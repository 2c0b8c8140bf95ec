"""The calculation endpoints through the ASGI app: worked answers, GET = POST, every kind."""

import pytest

LLAMA_H100 = {"chip": "h100", "model": "llama-8b", "phase": "decode", "batch": 1, "seq_len": 1024}


def post(client, path, workload, **top):
    return client.post(path, json={"chip": top.pop("chip", "a100"), "workload": workload, **top})


def test_expected_time_of_llama_decode_on_h100(client):
    # bytes = 15,009,849,344 weights + 134,217,728 KV read + 131,072 written = 15,144,198,144
    # at 3.35 TB/s: 4.5206 ms, memory-bound (engine test has the full derivation)
    body = client.get("/expected-time", params=LLAMA_H100).json()
    assert body["chip"]["id"] == "h100-sxm5-80gb"
    assert body["model"]["id"] == "llama-3.1-8b"
    assert body["bytes"] == 15_144_198_144
    assert body["bound"] == "memory"
    # the catalog's H100 SXM5 bandwidth is the datasheet's 3.35 TB/s
    assert body["memory_bandwidth"] == 3.35e12
    assert body["expected_time_s"] == pytest.approx(15_144_198_144 / 3.35e12, rel=1e-12)
    assert body["tokens_per_s"] == pytest.approx(1 / body["expected_time_s"])
    assert body["time_per_output_token_s"] == body["expected_time_s"]
    assert body["realistic_time_s"] > body["expected_time_s"]
    assert body["workload"]["weight_dtype"] == "bf16"  # defaults are echoed
    assert body["catalog_version"]
    assert any("memory" in line.lower() for line in body["explanation"])


def test_get_and_post_give_the_same_answer(client):
    got = client.get("/expected-time", params=LLAMA_H100).json()
    params = {k: v for k, v in LLAMA_H100.items() if k != "chip"}
    posted = post(client, "/expected-time", {"kind": "transformer", **params}, chip="h100").json()
    assert got == posted


def test_matmul_4096_bf16_on_a100(client):
    # 2 * 4096^3 = 1.374e11 FLOPs at 312 TFLOP/s = 440.5 us; 100.7 MB at 2.039 TB/s = 49.4 us
    body = post(
        client,
        "/expected-time",
        {"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"},
    ).json()
    assert body["flops"] == 137_438_953_472
    assert body["bytes"] == 100_663_296
    assert body["bound"] == "compute"
    assert body["expected_time_s"] == pytest.approx(440.5e-6, rel=1e-3)
    assert body["ridge_intensity"] == pytest.approx(153.0, rel=1e-3)
    assert body["model"] is None


@pytest.mark.parametrize(
    ("workload", "flops", "nbytes"),
    [
        # x.cos().cos() fused: 2 FLOPs and 8 bytes per fp32 element
        ({"kind": "elementwise", "n": 1000, "ops": ["cos", "cos"]}, 2000, 8000),
        # unfused: each op reads and writes: 16 bytes per element
        ({"kind": "elementwise", "n": 1000, "ops": 2, "fused": False}, 2000, 16000),
        ({"kind": "saxpy", "n": 1000}, 2000, 12000),
        ({"kind": "softmax", "rows": 10, "cols": 100}, 5000, 8000),
        ({"kind": "rmsnorm", "rows": 10, "cols": 100}, 4000, 8400),
        # layernorm: 7 FLOPs per element; read and write 1000 fp32 elements plus gamma and beta
        # (2 * 100): (2000 + 200) * 4 bytes
        ({"kind": "layernorm", "rows": 10, "cols": 100}, 7000, 8800),
        # a fused multiply-add is 2 FLOPs per element, cos 1: 3 * 1000; one input, one output
        ({"kind": "elementwise", "n": 1000, "ops": ["fma", "cos"]}, 3000, 8000),
        # 4 B H Lq Lk d = 4 * 2 * 16 * 16 * 8 = 16,384; Q, K, V, O: 4 * 2 * 16 * 8 * 2 bytes
        ({"kind": "attention", "heads": 2, "q_len": 16, "head_dim": 8}, 16384, 2048),
        ({"kind": "custom", "flops": 1e9, "bytes": 1e6}, 1e9, 1e6),
    ],
)
def test_every_kernel_kind(client, workload, flops, nbytes):
    response = post(client, "/expected-time", workload)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["flops"] == flops
    assert body["bytes"] == nbytes
    assert body["expected_time_s"] == max(body["compute_time_s"], body["memory_time_s"])


def test_an_inline_config_answers_like_the_catalog_model(client):
    config = client.get("/models/llama-8b").json()["config"]
    inline = post(
        client, "/expected-time", {"kind": "transformer", "config": config, "seq_len": 1024}
    ).json()
    named = client.get("/expected-time", params={**LLAMA_H100, "chip": "a100"}).json()
    assert inline["model"]["id"] == "custom"
    assert inline["flops"] == named["flops"]
    assert inline["bytes"] == named["bytes"]


# Llama 3.1 8B on an H100 SXM5 (989.4e12 FLOP/s bf16 dense, 3.35e12 B/s), batch 4, prompt or
# context 512, 64 generated. N_mm = 7,504,658,432; weights streamed 15,009,849,344 bytes; KV
# 131,072 bytes per token.
# prefill: 2 N_mm (4 * 512) + 2 L B P^2 H dh = 30,739,080,937,472 + 2 * 32 * 4 * 512^2 * 32 * 128
#   (274,877,906,944) = 31,013,958,844,416 FLOPs: 31.3462 ms; bytes 15,009,849,344 + KV written
#   2048 * 131,072 + residual 2 * 32 * 2048 * 4096 * 2 = 16,352,026,624: 4.8812 ms.
#   Compute-bound: 31.3462 ms for 2048 tokens.
PREFILL_FLOPS = 31_013_958_844_416
ATTENTION_FLOPS = 2 * 32 * 4 * 512**2 * 32 * 128  # 274,877,906,944
PREFILL_TIME = 31_013_958_844_416 / 989.4e12
# decode at C = 512: 4 (2 N_mm + 4 L C H dh) = 4 * (15,009,316,864 + 268,435,456)
#   = 61,111,009,280 FLOPs (61.8 us); bytes 15,009,849,344 + 4 * 512 * 131,072 + 4 * 131,072
#   = 15,278,809,088: 4.5608 ms, memory-bound, for 4 tokens.
DECODE_TIME = 15_278_809_088 / 3.35e12
# generate: the prefill, then 64 memory-bound steps at C = 512 .. 575 (sum of C = 34,784):
#   64 * 15,009,849,344 + 4 * 131,072 * 34,784 + 64 * 4 * 131,072 = 978,900,746,240 bytes:
#   292.209 ms (their compute, 3.96 ms in all, stays below the memory time at every step)
GENERATE_STEPS_TIME = 978_900_746_240 / 3.35e12


@pytest.mark.parametrize(
    ("phase", "answer"),
    [
        # (FLOPs, expected time, tokens, time to first token, time per output token)
        ("prefill", (PREFILL_FLOPS, PREFILL_TIME, 4 * 512, PREFILL_TIME, None)),
        ("decode", (61_111_009_280, DECODE_TIME, 4, None, DECODE_TIME)),
        (
            "generate",
            (
                None,
                PREFILL_TIME + GENERATE_STEPS_TIME,
                4 * 64,
                PREFILL_TIME,
                GENERATE_STEPS_TIME / 64,
            ),
        ),
        # training: forward, then backward twice the forward: 3 x the prefill FLOPs, and half
        # an attention forward more (the flash kernel's backward recomputes the scores):
        # 3 * 31,013,958,844,416 + 0.5 * 274,877,906,944 = 93,179,315,486,720
        ("training", (3 * PREFILL_FLOPS + 0.5 * ATTENTION_FLOPS, None, 4 * 512, None, None)),
    ],
)
def test_every_phase_answers(client, phase, answer):
    flops, expected_time, tokens, ttft, tpot = answer
    body = client.get(
        "/expected-time",
        params={
            "chip": "h100",
            "model": "llama-8b",
            "phase": phase,
            "batch": 4,
            "seq_len": 512,
            "gen_len": 64,
        },
    ).json()
    if flops is not None:
        assert body["flops"] == flops
    if expected_time is not None:
        assert body["expected_time_s"] == pytest.approx(expected_time, rel=1e-9)
    else:  # training: never below its compute term
        assert body["expected_time_s"] >= 3 * PREFILL_FLOPS / 989.4e12
    assert body["tokens_per_s"] == pytest.approx(tokens / body["expected_time_s"], rel=1e-12)
    assert body["time_to_first_token_s"] == (None if ttft is None else pytest.approx(ttft))
    assert body["time_per_output_token_s"] == (None if tpot is None else pytest.approx(tpot))


def test_w4a16_and_fp8_kv_are_separate_dtypes(client):
    base = {"chip": "h100", "model": "llama-8b", "seq_len": 4096}
    plain = client.get("/expected-time", params=base).json()
    w4 = client.get("/expected-time", params={**base, "weight_dtype": "int4"}).json()
    kv8 = client.get("/expected-time", params={**base, "kv_dtype": "fp8"}).json()
    assert w4["bytes"] < plain["bytes"] and w4["peak"]["dtype"] == "bf16"
    # the KV cache read halves: 4096 * 131,072 / 2 bytes fewer, plus half the written token
    assert plain["bytes"] - kv8["bytes"] == (4096 + 1) * 65_536


def test_memory_fit_of_llama_405b(client):
    # 405.85e9 params * 2 bytes = 811.7 GB of weights: no single 80 GB chip holds it;
    # across tensor-parallel H100s it needs at least 811.7 / (85.9 * 0.9) ~ 10.5 -> 16 chips
    # (the tp degree must divide the 128 heads)
    body = client.get("/memory-fit", params={"chip": "h100", "model": "llama-405b"}).json()
    assert body["fits"] is False
    assert body["max_batch"] == 0
    assert body["min_chips"] == 16
    breakdown = body["breakdown"]
    assert breakdown["weights"] == pytest.approx(405_853_388_800 * 2)
    assert body["required_bytes"] == pytest.approx(sum(breakdown.values()))


def test_memory_fit_of_training_counts_gradients_and_optimizer(client):
    body = client.get(
        "/memory-fit",
        params={"chip": "h100", "model": "llama-8b", "phase": "training", "seq_len": 2048},
    ).json()
    b = body["breakdown"]
    # mixed-precision AdamW: 2 + 2 + 12 bytes per parameter
    assert b["weights"] == pytest.approx(2 * 8_030_261_248)
    assert b["gradients"] == pytest.approx(2 * 8_030_261_248)
    assert b["optimizer"] == pytest.approx(12 * 8_030_261_248)
    assert body["fits"] is False  # 128.5 GB of state alone


def test_optimal_batch_curl_example(client):
    # derivation in tests/engine/test_batch.py: no compute-bound batch at 2048 tokens of
    # context; memory limits the batch to 227 on an A100 80GB
    response = client.get("/optimal-batch?chip=a100&model=llama-8b")
    assert response.status_code == 200
    body = response.json()
    assert body["optimal_batch"] == 227
    assert body["limited_by"] == "memory"
    assert body["ridge_batch"] is None
    assert body["asymptotic_intensity"] < body["ridge_intensity"]
    rows = {row["batch"]: row for row in body["sweep"]}
    assert rows[227]["fits"] and not rows[256]["fits"]
    assert set(rows[1]) == {
        "batch",
        "compute_time_s",
        "memory_time_s",
        "expected_time_s",
        "realistic_time_s",
        "memory_required_bytes",
        "fits",
        "tokens_per_s",
        "bound",
    }


def test_optimal_batch_at_short_context_is_the_ridge(client):
    body = client.get(
        "/optimal-batch", params={"chip": "a100", "model": "llama-8b", "seq_len": 128}
    ).json()
    assert body["limited_by"] == "ridge"
    assert body["optimal_batch"] == body["ridge_batch"] == 184


@pytest.mark.parametrize(
    ("ratio", "verdict"),
    [
        (0.5, "faster_than_roofline"),
        (1.2, "near_roofline"),
        (3.0, "room_to_improve"),
        (25.0, "order_of_magnitude_slower"),
    ],
)
def test_check_verdicts(client, ratio, verdict):
    # the decode of test_expected_time_of_llama_decode_on_h100: 15,144,198,144 B / 3.35e12 B/s
    expected = 15_144_198_144 / 3.35e12  # 4.5206 ms
    body = client.get("/check", params={**LLAMA_H100, "measured_time_s": ratio * expected}).json()
    assert body["ratio"] == pytest.approx(ratio)
    assert body["verdict"] == verdict
    assert body["advice"]
    assert body["expected_time_s"] == pytest.approx(expected, rel=1e-12)


def test_check_accepts_milliseconds_and_kernel_workloads(client):
    workload = {"kind": "elementwise", "n": 10**8, "ops": ["neg", "neg"]}
    # fused: 8e8 bytes / 2.039e12 = 392.4 us; 0.4 ms measured is near the roofline
    seconds = post(client, "/check", workload, measured_time_s=0.0004).json()
    millis = post(client, "/check", workload, measured_ms=0.4).json()
    assert seconds["ratio"] == pytest.approx(millis["ratio"])
    assert millis["verdict"] == "near_roofline"
    assert millis["advice"][0].startswith("Close to the memory roofline")


def test_attention_by_implementation(client):
    # B=8, H=16, L=4096, d=128 bf16 on a B200: 4 * 8 * 16 * 4096^2 * 128 = 1.0995e12 FLOPs,
    # ideal 1.0995e12 / 2.25e15 = 488.7 us whatever the kernel. FlashAttention-2's warp-level
    # MMA issues a quarter of Blackwell's peak, so its sustained kernel takes
    # 488.7 / 0.25 = 1955 us against 488.7 / 0.776 = 629.8 us for the fused kernel.
    shape = {"kind": "attention", "batch": 8, "heads": 16, "q_len": 4096, "head_dim": 128}
    answers = {
        impl: client.post(
            "/expected-time", json={"chip": "b200", "workload": {**shape, "implementation": impl}}
        ).json()
        for impl in ("fused", "flash-attention-2", "naive")
    }
    fused, fa2 = answers["fused"], answers["flash-attention-2"]
    assert fused["expected_time_s"] == fa2["expected_time_s"] == pytest.approx(488.7e-6, rel=1e-3)
    assert fa2["sustained_time_s"] == pytest.approx(1955e-6, rel=1e-3)
    assert fused["sustained_time_s"] == pytest.approx(629.8e-6, rel=1e-3)
    assert any("25% of the bf16 matrix peak" in a for a in fa2["assumptions"])
    assert any("FlashAttention-2" in a for a in fa2["assumptions"])
    assert answers["naive"]["expected_time_s"] > fused["expected_time_s"]
    default = client.post("/expected-time", json={"chip": "b200", "workload": shape}).json()
    assert default["expected_time_s"] == fused["expected_time_s"]
    assert default["assumptions"] == fused["assumptions"]
    both = {**shape, "flash": False, "implementation": "flash-attention-2"}
    r = client.post("/expected-time", json={"chip": "b200", "workload": both})
    assert r.status_code == 422
    assert "flash=false is the naive kernel" in r.text


def test_a_model_without_a_dtype_runs_in_fp16_on_a_chip_without_bf16(client):
    # T4 and V100 have fp16 tensor cores and no bf16: the default bf16 would be a 422, so a
    # question without a dtype is answered in fp16 and says so; elsewhere bf16 stays the
    # default, and an explicit bf16 on a T4 is still refused naming the dtypes it has
    t4 = client.get("/memory-fit?chip=t4&model=llama-8b").json()
    assert t4["workload"]["dtype"] == t4["workload"]["kv_dtype"] == "fp16"
    assert "dtype fp16 by default: t4 has no bf16 matrix peak" in t4["assumptions"]
    v100 = client.get("/expected-time?chip=v100&model=llama-8b").json()
    assert v100["workload"]["dtype"] == "fp16"
    a100 = client.get("/expected-time?chip=a100&model=llama-8b").json()
    assert a100["workload"]["dtype"] == "bf16"
    assert not any("by default" in a for a in a100["assumptions"])
    explicit = client.get("/expected-time?chip=t4&model=llama-8b&dtype=bf16")
    assert explicit.status_code == 422
    assert "t4 has no published bf16 matrix peak; available: fp16" in explicit.text


def test_an_answer_for_what_cannot_run_warns_first(client):
    # Llama 2 70B training on one H100: 69e9 parameters x 16 bytes (weights, gradients, AdamW)
    # = 1.10 TB plus activations, 1.48 TB, of the chip's 85.5 GB: the times are still given
    # (they answer "what if it fit"), and the first warning says they cannot happen
    body = client.get("/expected-time?chip=h100&model=llama-2-70b&phase=training&batch=8").json()
    assert body["fits"] is False
    assert body["warnings"][0].startswith("Does not fit: ")
    assert "1.48 TB per chip of 85.5 GB" in body["warnings"][0]
    fits = client.get("/expected-time?chip=h100&model=llama-3.2-1b").json()
    assert fits["fits"] is True
    assert not any(w.startswith("Does not fit") for w in fits["warnings"])


def test_a_check_gives_the_rates_it_achieved(client):
    # 2 * 4096^3 = 1.374e11 FLOPs and 3 * 4096^2 * 2 = 1.007e8 bytes in 0.6 ms on an A100:
    # 229.1 TFLOP/s, 73.4% of 312; 167.8 GB/s, 8.2% of 2,039 GB/s
    body = {
        "chip": "a100",
        "workload": {"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"},
        "measured_ms": 0.6,
    }
    answer = client.post("/check", json=body).json()
    assert answer["achieved_flops_per_s"] == pytest.approx(229.07e12, rel=1e-4)
    assert answer["flops_share_of_peak"] == pytest.approx(0.7342, rel=1e-3)
    assert answer["achieved_bytes_per_s"] == pytest.approx(167.77e9, rel=1e-4)
    assert answer["bytes_share_of_bandwidth"] == pytest.approx(0.08228, rel=1e-3)
