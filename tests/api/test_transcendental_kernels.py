"""A GPU's transcendental functions cost the same whichever way a kernel is asked for: an
`elementwise` chain of named ops, a `softmax` kernel, or the same operators in an `ops` list
(docs/formulas.md#transcendental-functions-on-a-gpu)."""

from typing import Any

import pytest

N = 100_000_000
A100_LANES = 19.5e12 / 2  # fp32 instructions a second: the fp32 vector peak over two


def _cos_op(source: str, result: str) -> dict[str, Any]:
    tensor = {"shape": [N], "dtype": "fp32"}
    return {
        "name": "aten::cos",
        "inputs": [{"id": source, **tensor}],
        "outputs": [{"id": result, **tensor}],
    }


def _answer(client, path: str, workload: dict[str, Any], **top) -> dict[str, Any]:
    response = client.post(path, json={"chip": "a100", "workload": workload, **top})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_a_cos_chain_answers_as_its_operator_list_does(client):
    # x.cos().cos() over 10^8 fp32 elements on an A100: each cos is CUDA's precise routine,
    # 40.8 fp32 instructions, at 9.75e12 a second: 2 x 10^8 x 40.8 / 9.75e12 = 836.92 us,
    # where the fused chain's 800 MB read and written take 8e8 / 2.039e12 = 392.35 us
    chain = {"kind": "elementwise", "n": N, "ops": ["cos", "cos"], "dtype": "fp32"}
    kernel = _answer(client, "/expected-time", chain)
    ops = _answer(
        client, "/expected-time", {"kind": "ops", "ops": [_cos_op("x", "y"), _cos_op("y", "z")]}
    )
    assert kernel["expected_time_s"] == pytest.approx(2 * N * 40.8 / A100_LANES)
    assert kernel["expected_time_s"] == pytest.approx(836.92e-6, rel=1e-5)
    assert kernel["bound"] == "compute"
    assert kernel["expected_time_s"] == pytest.approx(ops["expected_time_s"])
    # the FLOPs counted stay one an evaluation
    assert kernel["flops"] == 2 * N
    # given FLOPs per element of its own, a chain keeps them: its bytes bound it
    own = _answer(client, "/expected-time", {**chain, "flops_per_element": 3})
    assert own["bound"] == "memory"
    assert own["expected_time_s"] == pytest.approx(8e8 / 2.039e12)


def test_a_softmax_kernel_pays_for_its_exp(client):
    # 10^4 x 10^4 fp32: 5 FLOPs an element at 19.5 TFLOP/s = 25.64 us, and each exp 9.1
    # instructions instead of one FLOP: + 10^8 x (9.1 / 9.75e12 - 1 / 19.5e12) = 88.21 us;
    # 113.85 us of compute, under the 392.35 us of its 800 MB
    body = _answer(client, "/expected-time", {"kind": "softmax", "rows": 10**4, "cols": 10**4})
    compute = 5 * N / 19.5e12 + N * (9.1 / A100_LANES - 1 / 19.5e12)
    assert body["compute_time_s"] == pytest.approx(compute)
    assert body["compute_time_s"] == pytest.approx(113.85e-6, rel=1e-4)
    assert body["bound"] == "memory"


def test_fusion_is_offered_only_where_it_saves_time(client):
    # unfused, the two cos kernels move 1.6 GB, 784.70 us, still under their 836.92 us of
    # instructions: fusing saves bytes, not time, and the advice says so; two negations
    # are bound by their bytes, and fusing halves them (784.70 -> 392.35 us)
    def check(ops: list[str]) -> dict[str, Any]:
        workload = {"kind": "elementwise", "n": N, "ops": ops, "dtype": "fp32", "fused": False}
        return _answer(client, "/check", workload, stack="eager", measured_ms=2)

    cos = check(["cos", "cos"])
    assert cos["expected_time_s"] == pytest.approx(836.92e-6, rel=1e-5)
    assert not any("fused into one" in line for line in cos["advice"])
    assert any("fusing saves bytes, not arithmetic" in line for line in cos["advice"])
    neg = check(["neg", "neg"])
    assert neg["expected_time_s"] == pytest.approx(1.6e9 / 2.039e12)
    fusion = next(line for line in neg["advice"] if "fused into one" in line)
    assert "takes 392 µs ideally instead of 785 µs" in fusion
