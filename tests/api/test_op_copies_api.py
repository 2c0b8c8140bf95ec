"""Copy operators between host and device memory in an `ops` workload, through the ASGI
app: priced on the chip's host link, with their share of a measured time."""

import pytest

GPU = {"shape": [250_000_000], "device": "cuda:0", "id": "x"}
HOST = {"shape": [250_000_000], "device": "cpu", "id": "x_cpu"}
H2D = {"name": "aten::_to_copy", "inputs": [HOST], "outputs": [GPU]}
COS = {"name": "aten::cos", "inputs": [GPU], "outputs": [{**GPU, "id": "y"}]}


def post(client, path, workload, **top):
    body = {"chip": "a100", "workload": {"kind": "ops", **workload}, **top}
    return client.post(path, json=body)


def test_an_h2d_copy_then_a_cos_on_an_a100(client):
    # A100's host link: PCIe Gen4 x16, 32 GB/s each way. 1 GB of fp32 h2d: 1e9 / 32e9 =
    # 31.25 ms ideal, bound by the link; cos then reads and writes 1 GB at 2.039 TB/s:
    # 2e9 / 2.039e12 = 0.981 ms, under its 2.5e8 evaluations of CUDA's precise cos, 40.8 fp32
    # instructions each at 9.75e12 a second: 1.046 ms. The whole: 32.30 ms, bound by
    # communication.
    body = post(client, "/expected-time", {"ops": [H2D, COS]}).json()
    copy, cos = body["ops"]
    assert copy["bytes"] == 1e9 and copy["flops"] == 0
    assert copy["expected_time_s"] == pytest.approx(31.25e-3)
    assert cos["expected_time_s"] == pytest.approx(2.5e8 * 40.8 / 9.75e12)
    assert body["expected_time_s"] == pytest.approx(31.25e-3 + 2.5e8 * 40.8 / 9.75e12)
    assert body["communication_time_s"] == pytest.approx(31.25e-3)
    assert body["bound"] == "communication"


def test_check_says_what_share_of_the_measured_time_the_copies_take(client):
    # 31.25 ms of a measured 40 ms: 78%
    body = post(client, "/check", {"ops": [H2D, COS]}, measured_ms=40).json()
    assert any(
        "copies (ops 0) take at least 78% of the measured time: 31.25 ms" in line
        for line in body["advice"]
    )


def test_a_copy_in_a_fused_group_is_a_422(client):
    response = post(client, "/expected-time", {"ops": [H2D, COS], "groups": [[0, 1]]})
    assert response.status_code == 422
    assert "fuses with nothing" in response.text


def test_a_copy_between_two_devices_is_a_422_naming_the_op(client):
    other = {**H2D, "inputs": [{**GPU, "device": "cuda:1"}]}
    response = post(client, "/expected-time", {"ops": [other]})
    assert response.status_code == 422
    assert "cuda:1 to cuda:0" in response.text
