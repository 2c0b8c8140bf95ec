"""flash_attention=false in an inference request: the answer counts the scores' traffic,
echoes the field instead of ignoring it, and offers the fused kernel as a what-if."""

import pytest

# llama.cpp's fp16 GEMMs accumulate in fp16, at the RTX 4090's 330.3 TFLOP/s
QUERY = {
    "chip": "rtx4090",
    "model": "llama-8b",
    "phase": "prefill",
    "seq_len": 8192,
    "dtype": "fp16",
    "stack": "llama.cpp",
}


def test_a_prefill_without_flash_pays_for_its_scores(client):
    fused = client.get("/expected-time", params=QUERY).json()
    unfused = client.get(
        "/expected-time", params={**QUERY, "flash_attention": "false", "what_if": "true"}
    ).json()
    # 16 B x 32 layers x 32 heads x 8192^2 / 2 causal scores = 549.8 GB more, 0.545 s at the
    # RTX 4090's 1,008 GB/s: with the 20.4 GB of weights, KV and activations, 0.566 s, over
    # the 1.405e14 FLOPs' 0.425 s at 330.3 TFLOP/s, so the prompt turns memory-bound
    assert unfused["bytes"] - fused["bytes"] == pytest.approx(549_755_813_888)
    assert unfused["bound"] == "memory" and fused["bound"] == "compute"
    assert unfused["expected_time_s"] == pytest.approx((fused["bytes"] + 549_755_813_888) / 1008e9)
    assert unfused["workload"]["flash_attention"] is False
    assert (
        "attention without a fused (flash) kernel: three kernels a layer, every score written "
        "and read in fp32 (16 bytes)" in unfused["assumptions"]
    )
    assert not any("without a fused" in a for a in fused["assumptions"])
    assert not any("flash_attention" in w for w in unfused.get("warnings", []))
    (flash,) = [w for w in unfused["what_if"] if w["key"] == "flash_attention_on"]
    assert flash["expected_time_s"] == pytest.approx(fused["expected_time_s"])
    assert flash["speedup"] > 1
    # a request with the flash kernel has nothing to gain from it
    assert not any(
        w["key"] == "flash_attention_on"
        for w in client.get("/expected-time", params={**QUERY, "what_if": "true"}).json()["what_if"]
    )


def test_a_training_step_without_flash_says_it_stores_its_scores(client):
    query = {"chip": "h100", "model": "llama-8b", "phase": "training", "flash_attention": "false"}
    answer = client.get("/expected-time", params=query).json()
    assert (
        "attention without a fused (flash) kernel: its scores stored for the backward, which "
        "reads them instead of recomputing" in answer["assumptions"]
    )
