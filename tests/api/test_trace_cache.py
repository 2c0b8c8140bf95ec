"""A profiler trace whose op reads a working set that fits in the chip's last-level cache,
timed faster than the memory roof, is cache-resident (docs/formulas.md#the-cache-roof), as
/check judges the same work: each op and the whole are judged with the chip's cache."""

import json

import pytest

# A bf16 GEMV, (1, 4,000) @ (4,000, 4,000), on an A100 SXM4 80GB: bytes
# (4,000 + 16,000,000 + 4,000) x 2 = 32,016,000 (30.5 MiB), in its 40 MiB L2; 2 x 4,000 x
# 4,000 = 3.2e7 FLOPs, 3.2e7 / 312e12 = 0.10 us of compute. Memory roof 32,016,000 /
# 2.039e12 = 15.70 us; L2 roof 32,016,000 / 7.219e12 = 4.435 us. Its kernel at 10 us lies
# between the two: cache-resident; at 4 us it is under the L2 roof too: a timing error.
BYTES = (4_000 + 4_000 * 4_000 + 4_000) * 2
MEMORY_ROOF = BYTES / 2.039e12
L2_ROOF = BYTES / 7.219e12


def gemv_trace(kernel_us):
    """One aten::mm on bf16 tensors and the kernel it launched (its External id), in the
    format torch's profiler writes."""
    types = ["c10::BFloat16", "c10::BFloat16"]
    args = {"Input Dims": [[1, 4_000], [4_000, 4_000]], "Input type": types, "External id": 1}
    mm = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 0, "tid": 1, "ts": 0}
    kernel = {"ph": "X", "cat": "kernel", "name": "gemv2T_kernel", "pid": 0, "tid": 7, "ts": 5}
    link = {"External id": 1, "correlation": 1}
    events = [{**mm, "dur": 40, "args": args}, {**kernel, "dur": kernel_us, "args": link}]
    return {"traceEvents": events}


def post(client, body):
    response = client.post(
        "/check/trace",
        params={"chip": "a100"},
        content=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_a_gemv_kernel_between_the_l2_and_memory_roofs_is_cache_resident(client):
    body = post(client, gemv_trace(10.0))
    [op] = body["ops"]
    assert (op["name"], op["bytes"], op["count"]) == ("aten::mm", BYTES, 1)
    assert op["expected_time_s"] == pytest.approx(MEMORY_ROOF, rel=1e-3)  # 15.70 us
    assert op["measured_time_s"] == pytest.approx(10e-6)
    assert op["verdict"] == "cache_resident"
    assert body["verdict"] == "cache_resident"  # the whole is the one op
    # 32,016,000 B = 30.5 MiB; read at 32,016,000 / 10 us = 3.2 TB/s, 1.6x the 2.039 TB/s
    # the kernel ran 10 us of the 40 us the operator spans: said first, the verdict's after
    lead, first, bound, _flush = body["advice"]
    assert lead.startswith("The verdict judges the kernels alone: they take 10 µs of the 40 µs")
    assert first.startswith("Cache-resident: the working set (30.5 MiB) fits in the 40 MiB L2")
    assert "at 3.2 TB/s, 1.6x the memory bandwidth" in first
    assert bound == "The L2 roof (7.22 TB/s) allows 4.43 µs; measured 2.3x that."


def test_under_the_l2_roof_it_is_still_a_timing_error(client):
    body = post(client, gemv_trace(4.0))  # 4 us < 4.435 us
    [op] = body["ops"]
    assert op["verdict"] == body["verdict"] == "faster_than_roofline"
