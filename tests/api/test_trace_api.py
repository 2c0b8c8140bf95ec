"""POST /check/trace through the ASGI app, on traces recorded with real torch on the CPU
(tests/traces/record.py) and on an H100 (tests/traces/gpu_*.json): worked answers, nested ops
counted once, ops the engine does not model, the kernels' view, a trace never judged against a
chip it did not run on unless asked, and every rejection a clear 4xx."""

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.engine.trace import MAX_DISTINCT
from app.engine.trace_events import MAX_EVENTS
from app.main import create_app
from app.settings import Settings

TRACES = Path(__file__).resolve().parent.parent / "traces"


def trace(name):
    return json.loads((TRACES / f"{name}.json").read_text())


def durations(events, name):
    return [e["dur"] * 1e-6 for e in events if e.get("cat") == "cpu_op" and e["name"] == name]


def post(client, body, chip="a100", *, mismatch=True, **params):
    """POST the trace; the CPU recordings are judged on a GPU on purpose (`mismatch`, the
    allow_device_mismatch parameter: their arithmetic is the same)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    allowed = {"allow_device_mismatch": "true"} if mismatch else {}
    return client.post(
        "/check/trace",
        params={"chip": chip, **allowed, **params},
        content=data,
        headers={"content-type": "application/json"},
    )


def test_a_matmul_against_its_roofline_worked_by_hand(client):
    # a @ b, (256, 512) @ (512, 128) fp32, three times on the CPU. Per call:
    # FLOPs = 2 m n k = 2 x 256 x 128 x 512 = 33,554,432;
    # bytes = (256 x 512 + 512 x 128 + 256 x 128) x 4 = 917,504 (each tensor once);
    # on an A100 SXM4 80GB (19.5 TFLOP/s fp32 without tensor cores, 2.039 TB/s):
    # compute 33,554,432 / 19.5e12 = 1.7207 us, memory 917,504 / 2.039e12 = 0.4500 us:
    # compute-bound, 1.7207 us a call, 5.1622 us for the three.
    events = trace("matmul")["traceEvents"]
    body = post(client, trace("matmul")).json()
    assert body["time_source"] == "cpu_ops" and body["kernels"] is None
    assert body["chip"]["id"] == "a100-sxm4-80gb" and body["stack"] == "eager"
    [op] = body["ops"]
    measured = sum(durations(events, "aten::matmul"))
    assert op["name"] == "aten::matmul"
    assert (op["shapes"], op["dtype"], op["count"]) == ([[256, 512], [512, 128]], "fp32", 3)
    assert (op["flops"], op["bytes"]) == (33_554_432, 917_504)
    assert op["expected_time_s"] == pytest.approx(5.1622e-6, rel=1e-4)
    assert op["measured_time_s"] == pytest.approx(measured)
    assert op["ratio"] == pytest.approx(measured / 5.1622e-6, rel=1e-4)
    assert op["time_lost_s"] == pytest.approx(measured - 5.1622e-6, rel=1e-4)
    assert op["realistic_time_s"] >= op["expected_time_s"]
    assert op["verdict"] == "order_of_magnitude_slower"  # a CPU is not an A100
    # the whole: the one op; nothing unexplained
    assert body["measured_time_s"] == pytest.approx(measured)
    assert body["expected_time_s"] == pytest.approx(5.1622e-6, rel=1e-4)
    assert body["verdict"] == "order_of_magnitude_slower" and body["advice"]
    assert (body["not_modelled_time_s"], body["not_modelled_share"]) == (0, 0)
    assert "no GPU kernel events" in body["notes"][0]


def test_a_bf16_matmul_reads_the_dtype_from_the_trace(client):
    # c10::BFloat16: half the bytes (458,752), and the tensor cores' peak (312 TFLOP/s):
    # compute 0.1075 us, memory 0.2250 us a call: memory-bound
    [op] = post(client, trace("matmul_bf16")).json()["ops"]
    assert (op["dtype"], op["bytes"]) == ("bf16", 458_752)
    assert op["expected_time_s"] == pytest.approx(3 * 458_752 / 2.039e12, rel=1e-3)


def test_nested_ops_are_counted_once(client):
    # aten::matmul calls aten::mm; aten::linear calls aten::t, aten::addmm and a copy_ of its
    # bias; aten::softmax calls aten::_softmax: only the outermost counts, with all its time
    for name, outer, inner in [
        ("matmul", {"aten::matmul"}, "aten::mm"),
        ("mlp", {"aten::linear", "aten::gelu"}, "aten::addmm"),
        ("softmax", {"aten::softmax"}, "aten::_softmax"),
    ]:
        events = trace(name)["traceEvents"]
        body = post(client, trace(name)).json()
        assert {op["name"] for op in body["ops"]} == outer
        assert inner not in {op["name"] for op in body["not_modelled"]}
        top = sum(sum(durations(events, n)) for n in outer)
        assert body["measured_time_s"] == pytest.approx(top)
        assert body["not_modelled"] == []


def test_an_mlp_by_layer_sorted_by_time_lost(client):
    # Linear(512, 1024), GELU, Linear(1024, 512) on (64, 512), three times: two linears of
    # 2 x 64 x 1024 x 512 = 67,108,864 FLOPs each (the bias read, not added in FLOPs)
    body = post(client, trace("mlp")).json()
    ops = body["ops"]
    assert [op["count"] for op in ops] == [3, 3, 3]
    lost = [op["time_lost_s"] for op in ops]
    assert lost == sorted(lost, reverse=True)
    linears = [op for op in ops if op["name"] == "aten::linear"]
    assert {op["flops"] for op in linears} == {67_108_864}
    # bytes: x (64 x 512) + weight (1024 x 512) + bias (1024) + out (64 x 1024), fp32
    first = next(op for op in linears if op["shapes"][0] == [64, 512])
    assert first["bytes"] == (64 * 512 + 1024 * 512 + 1024 + 64 * 1024) * 4
    gelu = next(op for op in ops if op["name"] == "aten::gelu")
    assert gelu["flops"] == 5 * 64 * 1024  # 5 FLOPs an element (docs/formulas.md)
    assert body["expected_time_s"] == pytest.approx(sum(op["expected_time_s"] for op in ops))


def test_softmax_and_cos_cos(client):
    # softmax over (128, 1000) fp32: 5 FLOPs an element, 2 x 512,000 B: memory-bound,
    # 1,024,000 / 2.039e12 = 0.5022 us a call
    [softmax] = post(client, trace("softmax")).json()["ops"]
    assert (softmax["flops"], softmax["bytes"]) == (640_000, 1_024_000)
    assert softmax["expected_time_s"] == pytest.approx(3 * 0.5022e-6, rel=1e-3)
    # x.cos().cos() three times: six cos of 1e6 fp32, 8e6 B each (3.9235 us a call), each of
    # its 1e6 evaluations CUDA's precise cos, 40.8 fp32 instructions at the A100's 9.75e12 a
    # second: 4.1846 us a call, bound by its instructions (its exp-based softmax is not)
    [cos] = post(client, trace("cos_cos")).json()["ops"]
    assert (cos["count"], cos["flops"], cos["bytes"]) == (6, 1e6, 8e6)
    assert cos["expected_time_s"] == pytest.approx(6 * 1e6 * 40.8 / 9.75e12, rel=1e-4)
    assert cos["bound"] == "compute"


def test_ops_the_engine_does_not_model_are_listed_with_their_time(client):
    # v.to(float64).cumsum(0).cos(): aten::to is not modelled, but the aten::_to_copy it calls
    # is (a cast: 4 B read, 8 B written an element); aten::cumsum is not modelled at all
    events = trace("mixed")["traceEvents"]
    body = post(client, trace("mixed")).json()
    assert {op["name"] for op in body["ops"]} == {"aten::cos", "aten::_to_copy"}
    cast = next(op for op in body["ops"] if op["name"] == "aten::_to_copy")
    assert (cast["flops"], cast["bytes"], cast["dtype"]) == (0, 12e6, "fp32")
    missing = {n["name"]: n for n in body["not_modelled"]}
    assert set(missing) == {"aten::cumsum", "aten::to"}
    assert missing["aten::cumsum"]["reason"] == "not an operator the engine models"
    cumsum = sum(durations(events, "aten::cumsum"))
    assert missing["aten::cumsum"]["measured_time_s"] == pytest.approx(cumsum)
    # aten::to counts only its time outside aten::_to_copy (the 'to' inside cumsum is in it)
    outside = sum(durations(events, "aten::to")[i] for i in (0, 2, 4)) - sum(
        durations(events, "aten::_to_copy")
    )
    assert missing["aten::to"]["measured_time_s"] == pytest.approx(outside, abs=1e-9)
    assert missing["aten::to"]["count"] == 3
    top = sum(durations(events, "aten::to")[i] for i in (0, 2, 4))
    top += cumsum + sum(durations(events, "aten::cos"))
    assert body["measured_time_s"] == pytest.approx(top)
    share = body["not_modelled_time_s"] / body["measured_time_s"]
    assert body["not_modelled_share"] == pytest.approx(share)
    assert body["modelled_time_s"] == pytest.approx(top - body["not_modelled_time_s"])


def with_kernels(recorded):
    """The matmul trace as a GPU run would add to it (synthetic, in the format torch's
    profiler writes): a kernel launched by each aten::mm (its External id), and a memcpy
    no operator in the trace launched."""
    events = recorded["traceEvents"]
    mms = [e for e in events if e.get("name") == "aten::mm"]
    kernels = [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "ampere_sgemm_128x64_nn",
            "pid": 0,
            "tid": 7,
            "ts": mm["ts"] + 5,
            "dur": 20.0,
            "args": {"External id": mm["args"]["External id"], "correlation": 100 + i},
        }
        for i, mm in enumerate(mms)
    ]
    copy = {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "ts": 0, "dur": 4.0}
    return {**recorded, "traceEvents": [*events, *kernels, copy]}


def test_kernel_events_are_the_measured_time_when_the_trace_has_them(client):
    body = post(client, with_kernels(trace("matmul"))).json()
    assert body["time_source"] == "kernels"
    [op] = body["ops"]
    assert op["name"] == "aten::matmul"  # the kernels of its aten::mm count in it
    assert op["measured_time_s"] == pytest.approx(3 * 20e-6)
    assert body["kernels"]["kernels"] == 4
    assert body["kernels"]["kernel_time_s"] == pytest.approx(64e-6)
    assert body["kernels"]["unattributed_time_s"] == pytest.approx(4e-6)
    cpu = sum(durations(trace("matmul")["traceEvents"], "aten::matmul"))
    assert body["kernels"]["op_cpu_time_s"] == pytest.approx(cpu)
    assert "GPU kernels' durations" in body["notes"][0]


def test_the_notes_say_what_was_skipped_and_what_was_over_the_bound(client):
    def cos(ts, size):
        args = {"Input Dims": [[size]], "Input type": ["float"]}
        return {"cat": "cpu_op", "name": "aten::cos", "ts": ts, "dur": 5, "args": args}

    events = [cos(10 * i, i + 1) for i in range(MAX_DISTINCT + 1)]
    events.append(cos(None, 1))
    notes = post(client, {"traceEvents": events}).json()["notes"]
    skipped = "1 cpu_op events without a usable ts or dur (missing, negative, or over 10^7 s)"
    assert f"{skipped} were skipped." in notes
    assert f"Only {MAX_DISTINCT} distinct operators are analysed" in notes[-1]


def test_the_chip_and_stack_are_checked(client):
    response = post(client, trace("matmul"), chip="a1000")
    assert response.status_code == 404
    assert "a100" in " ".join(response.json()["detail"]["suggestions"])
    assert post(client, trace("matmul"), stack="warp").status_code == 422
    compiled = post(client, trace("matmul"), stack="compiled").json()
    assert compiled["stack"] == "compiled"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"\x89PNG not json", "not JSON"),
        (b'{"traceEvents": [NaN]}', "not JSON"),
        (b"[" * 100_000, "not JSON"),
        (b"[]", "expected a JSON object whose traceEvents"),
        (b'{"events": []}', "expected a JSON object whose traceEvents"),
        (b'{"traceEvents": {}}', "expected a JSON object whose traceEvents"),
        (b'{"traceEvents": [{"cat": "kernel"}]}', "no cpu_op events"),
        (
            b'{"traceEvents": [{"cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]}',
            "recorded without shapes",
        ),
    ],
)
def test_what_is_not_a_trace_is_a_422_that_says_how_to_record_one(client, body, words):
    response = post(client, body)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body"] and error["type"] == "not_a_trace"
    assert words in error["msg"]
    if "JSON object" in words or "cpu_op" in words or "shapes" in words:
        assert "record_shapes=True" in error["msg"] and "export_chrome_trace" in error["msg"]


def test_too_many_events_is_a_413(client):
    body = b'{"traceEvents": [' + b",".join([b"{}"] * (MAX_EVENTS + 1)) + b"]}"
    response = post(client, body)
    assert response.status_code == 413
    assert f"at most {MAX_EVENTS}" in response.json()["detail"]["message"]


def test_a_body_over_the_trace_cap_is_a_413_before_it_is_read(tmp_path):
    settings = Settings(database_url=f"sqlite:///{tmp_path}/db.sqlite", max_trace_bytes=4096)
    small = TestClient(create_app(settings))
    recorded = json.dumps(trace("matmul")).encode()
    assert len(recorded) > 4096
    response = post(small, recorded)
    assert response.status_code == 413
    assert "larger than 4096 bytes" in response.json()["detail"]["message"]
    # the other endpoints keep their own, smaller cap
    assert small.post("/memory-fit", content=b"x" * 70_000).status_code == 413


def test_the_endpoint_is_in_the_openapi_schema_with_its_response_model(client):
    schema = client.get("/openapi.json").json()
    operation = schema["paths"]["/check/trace"]["post"]
    ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert ref.endswith("/TraceCheck")
    assert {"413", "422", "404"} <= set(operation["responses"])
    assert "traceEvents" in json.dumps(operation["requestBody"])


def test_a_gpu_trace_on_its_own_chip_worked_by_hand(client):
    # x.cos().cos() on 10^7 fp32 on an H100, warmed up, 10 times: 20 aten::cos, each launching
    # one kernel. Per call 4 x 10^7 bytes read and written: 8e7 bytes; on the H100 SXM5
    # (3.35 TB/s) 8e7 / 3.35e12 = 23.88 us; 20 calls 477.6 us. Measured: the kernels' time.
    events = trace("gpu_cos")["traceEvents"]
    kernel_time = sum(e["dur"] * 1e-6 for e in events if e.get("cat") == "kernel")
    response = post(client, trace("gpu_cos"), chip="h100", mismatch=False)
    assert response.status_code == 200
    body = response.json()
    assert body["warnings"] == [] and body["time_source"] == "kernels"
    [op] = body["ops"]
    assert (op["name"], op["count"], op["bytes"]) == ("aten::cos", 20, 8e7)
    assert op["expected_time_s"] == pytest.approx(20 * 8e7 / 3.35e12)
    assert op["measured_time_s"] == pytest.approx(kernel_time)
    assert body["verdict"] == "near_roofline"  # 569 us against 478 us: 1.19x


def test_a_cpu_trace_against_a_gpu_chip_is_a_422_naming_both_devices(client):
    response = post(client, trace("matmul"), chip="h100", mismatch=False)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["query", "chip"]
    assert error["type"] == "device_mismatch"
    assert "no GPU kernel events: it ran on cpu" in error["msg"]
    assert "h100-sxm5-80gb (NVIDIA H100 SXM5 80GB)" in error["msg"]
    assert "ProfilerActivity.CUDA" in error["msg"] and "allow_device_mismatch=true" in error["msg"]


def test_gpu_tensors_recorded_without_the_cuda_activity_say_how_to_record(client):
    # the H100 run's CUDA calls are in the trace (21 to the runtime, 10 to the driver:
    # cuLaunchKernel, cudaMemsetAsync, ...), its kernels are not
    response = post(client, trace("gpu_no_kernels"), chip="h100", mismatch=False)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert "31 CUDA API calls but no GPU kernel events" in error["msg"]
    assert "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]" in error["msg"]


def test_allowed_the_mismatch_is_judged_and_the_answer_warns_first(client):
    refused = post(client, trace("matmul"), chip="h100", mismatch=False).json()
    response = post(client, trace("matmul"), chip="h100")
    assert response.status_code == 200
    body = response.json()
    assert next(iter(body)) == "warnings"  # the answer's first field
    [warning] = body["warnings"]
    assert warning.startswith("Judged against h100-sxm5-80gb, a chip the trace did not run on")
    assert refused["detail"][0]["msg"].split(": ")[1] in warning  # the same reason
    assert body["verdict"] == "order_of_magnitude_slower"  # the CPU's times, as before


def test_a_gpu_trace_against_another_gpu_is_a_422_naming_both(client):
    # the trace names the GPU it ran on (deviceProperties): an H100's is no A100's run
    response = post(client, trace("gpu_cos"), chip="a100", mismatch=False)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["type"] == "device_mismatch"
    assert "ran on NVIDIA H100 80GB HBM3, not on a100-sxm4-80gb" in error["msg"]
    # an H100 of another form factor has the same model number: judged
    assert post(client, trace("gpu_cos"), chip="h100-pcie", mismatch=False).status_code == 200
    allowed = post(client, trace("gpu_cos"), chip="a100").json()
    assert "NVIDIA H100 80GB HBM3" in allowed["warnings"][0]


def test_a_kernel_trace_that_names_no_device_is_judged(client):
    # the synthetic kernels above come without deviceProperties: nothing says it is another chip
    assert trace("matmul")["deviceProperties"] == []
    assert post(client, with_kernels(trace("matmul")), mismatch=False).status_code == 200
