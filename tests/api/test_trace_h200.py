"""Traces recorded on an NVIDIA H200 (PyTorch 2.11, CUDA 13.0; tests/traces/record.py says
how): the chip's own run judged against it, refused against an H100 (whose id shares the
letter but not the model number), and an eager decode step whose kernels are near their
roofline while the step loses most of its time on the host."""

import json
from pathlib import Path

import pytest

TRACES = Path(__file__).resolve().parent.parent / "traces"


def post(client, name, chip):
    return client.post(
        "/check/trace",
        params={"chip": chip},
        content=(TRACES / f"{name}.json").read_bytes(),
        headers={"content-type": "application/json"},
    )


def test_the_h200s_trace_is_refused_against_an_h100(client):
    refused = post(client, "gpu_linear_h200", "h100")
    assert refused.status_code == 422
    [error] = refused.json()["detail"]
    assert error["type"] == "device_mismatch"
    assert "ran on NVIDIA H200, not on h100-sxm5-80gb (NVIDIA H100 SXM5 80GB)" in error["msg"]


def test_the_readmes_linear_on_the_h200_worked_by_hand(client):
    # ten torch.nn.Linear(4096, 4096) calls on a (64, 4096) fp32 input: 2 * 64 * 4096 * 4096
    # = 2.147 GFLOP each, no TF32; at the H200's fp32 peak (66.9 TFLOP/s, the H100 SXM's
    # arithmetic) 32.1 us each, 320.5 us for ten. The kernels took 848.7 us: 2.65x.
    body = post(client, "gpu_linear_h200", "h200").json()
    assert body["chip"]["id"] == "h200-sxm-141gb" and body["warnings"] == []
    [op] = body["ops"]
    assert (op["name"], op["count"], op["flops"]) == ("aten::linear", 10, 2 * 64 * 4096**2)
    assert body["expected_time_s"] == pytest.approx(320.5e-6, rel=1e-3)
    assert body["measured_time_s"] == pytest.approx(848.7e-6, rel=1e-3)
    assert body["verdict"] == "room_to_improve"


def test_an_eager_decode_step_loses_its_time_on_the_host_and_says_so_first(client):
    # three steps of 4 Llama-3-8B-shaped layers, batch 1, 1,024 cached tokens, bf16, eager.
    # The widest matmul, x (1, 4096) by the gate-up weight (4096, 28672): its 234.9 MB at
    # 4.8 TB/s take 48.9 us; 12 of them (4 layers, 3 steps) 587.4 us. The kernels (2.48 ms)
    # are near their memory roofline (1.76 ms), but the host, dispatching some 200 operators
    # one by one, kept the GPU waiting for 5.04 ms of the 8.65 ms the trace spans.
    body = post(client, "gpu_decode_h200", "h200").json()
    widest = next(op for op in body["ops"] if op["shapes"][1] == [4096, 28672])
    assert widest["count"] == 12
    assert widest["expected_time_s"] == pytest.approx(12 * 4096 * 28672 * 2 / 4.8e12, rel=1e-3)
    assert body["verdict"] == "near_roofline" and body["bound"] == "memory"
    parts = {p["part"]: p for p in body["breakdown"]["parts"]}
    assert body["breakdown"]["attack_first"] == "host_waits"
    assert parts["host_waits"]["time_s"] == pytest.approx(5.04e-3, rel=1e-2)
    # the kernel verdict comes after what it leaves out: the step's time is mostly elsewhere
    first, second = body["advice"][:2]
    assert first.startswith(
        "The verdict judges the kernels alone: they take 2.48 ms of the 8.65 ms the trace spans "
        "(29%). Attack the host waits first"
    )
    assert "CUDA graph" in first and second.startswith("Close to the memory roofline")
    # sums of the same kernels added in two orders leave no time unmapped
    assert body["breakdown"]["unmapped_kernel_time_s"] == 0.0
    assert "the unmapped ones (0 s)" in parts["kernels"]["limit"]


def test_the_traces_are_untouched_kineto_output_of_the_h200():
    for name in ("gpu_linear_h200", "gpu_decode_h200"):
        trace = json.loads((TRACES / f"{name}.json").read_text())
        [device] = trace["deviceProperties"]
        assert device["name"] == "NVIDIA H200" and trace["cuda_runtime_version"] >= 13000
