"""The `ops` workload through the ASGI app: worked answers, the verdict against fusion, and
every bad input a 422 naming its field."""

import pytest

X = {"shape": [100_000_000], "dtype": "fp32"}
COS = {"name": "aten::cos", "inputs": [X], "outputs": [X]}
# a pointwise op without a transcendental function: one FLOP an element, its bytes the bound
NEG = {"name": "aten::neg", "inputs": [X], "outputs": [X]}


def post(client, path, workload, **top):
    body = {"chip": "a100", "workload": {"kind": "ops", **workload}, **top}
    return client.post(path, json=body)


def test_neg_neg_in_eager_pytorch_unfused_fused_and_the_launch_floor(client):
    # A100 SXM4 80GB: 2.039 TB/s, 19.5 TFLOP/s fp32. Each neg reads and writes 4e8 B:
    # 8e8 / 2.039e12 = 392.35 us, memory-bound; both: 784.70 us (the ideal: expected_time_s).
    # Eager: 2 launches of 2.31 us and one 3.0 us boundary between the kernels (the 2 x 8 us
    # of host dispatch hide under the device time): unfused 792.32 us; fused, 8e8 B and one
    # launch: 394.66 us; launching 2 kernels with nothing to do: max(2 x 2.31 + 3.0, 2 x 8)
    # = 16 us.
    body = post(client, "/expected-time", {"ops": [NEG, NEG]}, stack="eager").json()
    assert (
        body["ops"]
        == [
            {
                "name": "aten::neg",
                "flops": 1e8,
                "bytes": 8e8,
                "expected_time_s": pytest.approx(392.35e-6, rel=1e-4),
                "bound": "memory",
            }
        ]
        * 2
    )
    assert (body["flops"], body["bytes"], body["kernels"]) == (2e8, 1.6e9, 2)
    assert body["expected_time_s"] == pytest.approx(784.70e-6, rel=1e-4)
    assert body["unfused_time_s"] == pytest.approx(792.32e-6, rel=1e-4)
    assert body["fused_time_s"] == pytest.approx(394.66e-6, rel=1e-4)
    assert body["launch_overhead_s"] == pytest.approx(16e-6)
    assert body["bound"] == "memory"
    assert body["realistic_time_s"] >= body["expected_time_s"]
    low, high = body["realistic_range_s"]
    assert low <= body["realistic_time_s"] <= high
    assert body["workload"]["kind"] == "ops" and body["model"] is None
    assert "2 kernels each on its own" in body["explanation"][0]
    assert any("published elementwise runs" in line for line in body["assumptions"])
    assert any("none fused" in line for line in body["assumptions"])


def test_pytorchs_cos_on_an_a100_is_bound_by_its_instructions_not_its_bytes(client):
    # PyTorch evaluates cos with CUDA's precise routine: 40.8 fp32 instructions (measured on an
    # H200, app/engine/precise_functions.py). The A100's fp32 lanes issue 19.5e12 / 2 =
    # 9.75e12 a second: 1e8 x 40.8 / 9.75e12 = 418.46 us, over its bytes' 392.35 us. Two cos:
    # 836.92 us whether fused or not, so fusing them saves launches, not time: unfused
    # 836.92 + 2 x 2.31 + 3.0 = 844.54 us, fused 836.92 + 2.31 = 839.23 us.
    body = post(client, "/expected-time", {"ops": [COS, COS]}, stack="eager").json()
    [op, _] = body["ops"]
    assert (op["flops"], op["bound"]) == (1e8, "compute")
    assert op["expected_time_s"] == pytest.approx(1e8 * 40.8 / 9.75e12, rel=1e-4)
    assert body["expected_time_s"] == pytest.approx(836.92e-6, rel=1e-4)
    assert body["unfused_time_s"] == pytest.approx(844.54e-6, rel=1e-4)
    assert body["fused_time_s"] == pytest.approx(839.23e-6, rel=1e-4)
    # on an H100 its lanes (3.345e13 a second) take 122 us, under the bytes' 239 us (3.35 TB/s)
    h100 = post(client, "/expected-time", {"ops": [COS]}, chip="h100").json()
    assert h100["bound"] == "memory"
    assert h100["expected_time_s"] == pytest.approx(8e8 / 3.35e12, rel=1e-4)


def test_a_group_runs_as_one_kernel(client):
    body = post(client, "/expected-time", {"ops": [NEG, NEG], "groups": [[0, 1]]}).json()
    assert (body["bytes"], body["kernels"]) == (8e8, 1)
    assert body["expected_time_s"] == pytest.approx(392.35e-6, rel=1e-4)
    assert any("1 fused group as given" in line for line in body["assumptions"])


@pytest.mark.parametrize(
    ("measured_ms", "place", "words"),
    [
        (0.3, "faster_than_fused", "not what ran"),
        # faster than each op alone (0.7847 ms ideal) could be: more ran fused than given
        (0.5, "between_fused_and_unfused", "more of them ran fused than given"),
        (
            0.786,
            "between_fused_and_unfused",
            "fusing the ops into one kernel would reach 0.3947 ms",
        ),
        (2.0, "slower_than_unfused", "fused, the ops would take 0.3947 ms"),
    ],
)
def test_check_places_the_measured_time_between_fused_and_unfused(
    client, measured_ms, place, words
):
    body = post(
        client, "/check", {"ops": [NEG, NEG]}, stack="eager", measured_ms=measured_ms
    ).json()
    assert body["against_fusion"] == place
    assert words in body["advice"][0]
    # the verdict is still against the ideal roofline of the ops as given (unfused)
    assert body["ratio"] == pytest.approx(measured_ms * 1e-3 / body["expected_time_s"])


def test_a_matmul_and_its_activation_with_a_view_between(client):
    # mm 4096^3 bf16: 137,438,953,472 FLOPs, 100,663,296 B; the view is free; gelu over 4096^2
    # bf16: 5 FLOPs per element, 67,108,864 B; fused, only A, B and the gelu's output move.
    # The gelu's erf is CUDA's precise routine, 31.6 fp32 instructions: 4096^2 x 31.6 at the
    # A100's 9.75e12 a second take 54.4 us, and its 4 other FLOPs at 19.5 TFLOP/s 3.4 us:
    # 57.8 us, over its bytes' 32.9 us (2.039 TB/s).
    a = {"shape": [4096, 4096], "dtype": "bf16"}
    b = {"shape": [1, 4096, 4096], "dtype": "bf16"}
    ops = [
        {"name": "aten::mm", "inputs": [a, a], "outputs": [a]},
        {"name": "aten::view", "inputs": [a], "outputs": [b]},
        {"name": "aten::gelu", "inputs": [b], "outputs": [b]},
    ]
    body = post(client, "/expected-time", {"ops": ops}).json()
    assert [op["flops"] for op in body["ops"]] == [137_438_953_472, 0, 83_886_080]
    assert [op["bytes"] for op in body["ops"]] == [100_663_296, 0, 67_108_864]
    assert [op["bound"] for op in body["ops"]] == ["compute", None, "compute"]
    assert body["ops"][2]["expected_time_s"] == pytest.approx(57.8e-6, rel=1e-3)
    assert body["kernels"] == 2
    assert body["peak"] == {"flops_per_s": 312e12, "dtype": "bf16", "unit": "matrix"}
    assert body["published_runs"] > 0  # matmul runs calibrate it
    assert body["fused_time_s"] < body["unfused_time_s"]


def test_an_op_the_engine_does_not_know_is_given_its_flops_and_bytes(client):
    unknown = {"name": "mylib::fancy", "inputs": [X], "outputs": [X]}
    response = post(client, "/expected-time", {"ops": [unknown]})
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "workload", "ops", "0", "name"]
    assert "unknown operator 'mylib::fancy': give its flops and bytes" in error["msg"]
    given = {**unknown, "flops": 1e9, "bytes": 1e6}
    body = post(client, "/expected-time", {"ops": [given]}).json()
    assert (body["flops"], body["bytes"]) == (1e9, 1e6)


def _loc_tail(response, *tail):
    assert response.status_code == 422, response.text
    locs = [error["loc"] for error in response.json()["detail"]]
    assert any(tuple(loc[-len(tail) :]) == tail for loc in locs), locs
    return response.json()["detail"]


@pytest.mark.parametrize(
    ("workload", "tail"),
    [
        ({"ops": []}, ("ops",)),
        ({"ops": [{"name": "x"}] * 4097}, ("ops",)),
        ({"ops": [{"name": "aten::cos", "inputs": [{"shape": [2] * 9}]}]}, ("shape",)),
        ({"ops": [{"name": "aten::cos", "inputs": [{"shape": [2**31 + 1]}]}]}, ("shape", "0")),
        ({"ops": [{"name": "aten::cos", "inputs": [{"shape": [0]}]}]}, ("shape", "0")),
        ({"ops": [{"name": "aten::cos", "inputs": [X] * 65}]}, ("inputs",)),
        ({"ops": [COS], "groups": [[4096]]}, ("groups", "0", "0")),
        ({"ops": [COS], "groups": [[]]}, ("groups", "0")),
        ({"ops": [COS], "groups": [[0], [0]]}, ("ops",)),  # more indices than ops
        ({"ops": [COS, COS], "groups": [[0], [0]]}, ("groups", "1")),  # the engine's
        ({"ops": [COS, COS], "groups": [[0, 2]]}, ("groups", "0")),
        ({"ops": [{"name": "x", "flops": -1, "bytes": 1}]}, ("flops",)),
        ({"ops": [{"name": "x", "flops": 1, "bytes": 0}]}, ("bytes",)),
        ({"ops": [{**COS, "inputs": [X, X]}], "speed": 1}, ("speed",)),
        ({"ops": [{"name": "aten::mm", "inputs": [X, X], "outputs": [X]}]}, ("ops", "0")),
        ({"ops": [{"name": "aten::view", "inputs": [X], "outputs": [X]}]}, ("ops",)),
    ],
)
def test_bad_ops_are_a_422_naming_the_field(client, workload, tail):
    _loc_tail(post(client, "/expected-time", workload), *tail)


def test_a_dtype_the_chip_lacks_is_unsupported_and_names_the_op(client):
    fp8 = {"shape": [64, 64], "dtype": "fp8"}
    ops = [COS, {"name": "aten::mm", "inputs": [fp8, fp8], "outputs": [fp8]}]
    (error,) = _loc_tail(post(client, "/expected-time", {"ops": ops}), "ops", "1")
    assert error["type"] == "unsupported" and "aten::mm" in error["msg"]


def test_planning_endpoints_refuse_ops(client):
    response = post(client, "/memory-fit", {"ops": [COS]})
    assert response.status_code == 422


def test_a_measured_ops_run_is_stored_with_its_place_against_fusion(client):
    body = {"chip": "a100", "stack": "eager", "workload": {"kind": "ops", "ops": [NEG, NEG]}}
    response = client.post("/measurements", json={**body, "measured_ms": 1.0, "label": "neg"})
    assert response.status_code == 201, response.text
    stored = response.json()
    assert stored["verdict"] == "near_roofline"
    assert stored["expectation"]["against_fusion"] == "slower_than_unfused"
    assert stored["expectation"]["fused_time_s"] == pytest.approx(394.66e-6, rel=1e-4)


def test_a_tensor_mutated_in_place_is_written_back_by_the_fused_kernel(client):
    # x.add_(y); z = x.cos() over 1e8 fp32 elements (4e8 B a tensor) on an A100 (2.039 TB/s):
    # fused, x and y are read, x (mutated: its storage holds x + y after) and z written:
    # 4 x 4e8 = 1.6e9 B, 784.70 us of memory time, memory-bound (2e8 FLOPs: 10 us); each op
    # alone: add_ 1.2e9 B, cos 8e8 B
    x, y, z = ({**X, "id": name} for name in "xyz")
    ops = [
        {"name": "aten::add_.Tensor", "inputs": [x, y], "outputs": [x]},
        {"name": "aten::cos", "inputs": [x], "outputs": [z]},
    ]
    body = post(client, "/expected-time", {"ops": ops, "groups": [[0, 1]]}).json()
    assert [op["bytes"] for op in body["ops"]] == [1.2e9, 8e8]
    assert body["bytes"] == 1.6e9
    assert body["expected_time_s"] == pytest.approx(784.70e-6, rel=1e-4)
