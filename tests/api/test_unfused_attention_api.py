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
    # the fused kernel's FLOPs take the pace published attention kernels reach (1.5515 /
    # 1.1030 = 1.41 in the committed table); the unfused one's GEMMs are cuBLAS's
    pace = "its FLOPs at 1.41x their time at the sustained matrix rate"
    assert any(pace in a for a in fused["assumptions"])
    assert not any(pace in a for a in unfused["assumptions"])
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


def test_the_advice_says_what_the_scores_cost_and_what_keeps_them_on_chip(client):
    # the prefill above, measured at 1.7 s: its scores are 549.8 GB of the 570.1 GB it moves
    # (549,755,813,888 / 570,134,372,352 = 96.4%)
    prefill = client.get(
        "/check", params={**QUERY, "flash_attention": "false", "measured_ms": 1700}
    )
    (line,) = [a for a in prefill.json()["advice"] if a.startswith("Without a fused attention")]
    assert "550 GB, 96.4% of the bytes moved" in line and "flash_attention_on" in line
    # a decode step of batch 8 at context 4096 on an H100: 16 B x 32 layers x 8 x 4096 x 32
    # heads = 536,870,912 B of scores beside the weights' and the KV cache's
    decode = {"chip": "h100", "model": "llama-8b", "batch": 8, "seq_len": 4096}
    answer = client.get("/check", params={**decode, "flash_attention": "false", "measured_ms": 20})
    advice = answer.json()["advice"]
    assert any(a.startswith("Without a fused attention") and "537 MB" in a for a in advice)
    fused = client.get("/check", params={**decode, "measured_ms": 20}).json()["advice"]
    assert not any("Without a fused attention" in a for a in fused)
