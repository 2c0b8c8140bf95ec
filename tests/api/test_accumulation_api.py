"""llama.cpp's fp16 accumulation on a GeForce card through the ASGI app: the ideal at the
fp16-accumulate tensor peak, and the assumptions saying so."""

import pytest

PREFILL = {
    "chip": "rtx-4090",
    "model": "llama-8b",
    "phase": "prefill",
    "seq_len": 512,
    "dtype": "fp16",
}


def test_llama_cpp_fp16_prefill_on_an_rtx_4090_is_at_330_tflops(client):
    llama = client.get("/expected-time", params={**PREFILL, "stack": "llama.cpp"}).json()
    typical = client.get("/expected-time", params=PREFILL).json()
    # the same FLOPs at 330.3 TFLOP/s (fp16 accumulate) instead of 165.2 (fp32 accumulate)
    assert llama["flops"] == typical["flops"]
    assert llama["peak_flops"] == 330.3e12
    assert typical["peak_flops"] == 165.2e12
    assert llama["compute_time_s"] == pytest.approx(llama["flops"] / 330.3e12)
    assert llama["compute_time_s"] == pytest.approx(typical["compute_time_s"] * 165.2 / 330.3)
    assert any(
        "accumulate in fp16 on llama.cpp" in line and "330 TFLOP/s" in line
        for line in llama["assumptions"]
    )
    assert any(
        "accumulate in fp32 on typical" in line and "llama.cpp" in line
        for line in typical["assumptions"]
    )


def test_bf16_on_llama_cpp_keeps_the_fp32_accumulate_peak(client):
    body = client.get(
        "/expected-time", params={**PREFILL, "dtype": "bf16", "stack": "llama.cpp"}
    ).json()
    assert body["peak_flops"] == 165.2e12
    assert not any("accumulate" in line for line in body["assumptions"])


def test_the_catalog_shows_the_fp16_accumulate_rate_with_its_source(client):
    chip = client.get("/chips/rtx-4090").json()
    figure = chip["peak_flops_per_s"]["fp16_accumulate"]["fp16"]
    assert figure["value"] == 330.3e12
    assert figure["source"]["key"] == "nv-ada-wp"
