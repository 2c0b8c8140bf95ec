"""breakdown=true through the ASGI app: a transformer step by operation, adding up to the
answer's own totals."""

import pytest

DECODE = {"chip": "h100", "model": "llama-8b", "seq_len": 1024}


def test_a_decode_step_by_operation(client):
    # Llama 3.1 8B decode at batch 1 on an H100 (worked in tests/engine/test_breakdown.py):
    # every operation is memory-bound, the MLP's gate and up projections half of the bytes
    body = client.get("/expected-time", params={**DECODE, "breakdown": "true"}).json()
    rows = {row["name"]: row for row in body["breakdown"]}
    assert list(rows)[:3] == ["qkv_projection", "attention", "output_projection"]
    assert rows["mlp_gate_up"] == {
        "name": "mlp_gate_up",
        "count": 32,
        "flops": 7_516_192_768,
        "bytes": 7_516_192_768,
        "time_s": pytest.approx(7_516_192_768 / 3.35e12),
        "share": pytest.approx(7_516_192_768 / 15_144_198_144),
        "bound": "memory",
    }
    assert sum(row["flops"] for row in body["breakdown"]) == body["flops"]
    assert sum(row["bytes"] for row in body["breakdown"]) == body["bytes"]
    assert sum(row["share"] for row in body["breakdown"]) == pytest.approx(1)


def test_without_the_flag_there_is_no_breakdown(client):
    assert client.get("/expected-time", params=DECODE).json()["breakdown"] is None


@pytest.mark.parametrize(
    "params",
    [
        {"phase": "prefill", "batch": 4, "tp": 2},
        {"phase": "training", "batch": 32, "seq_len": 4096, "tp": 2, "pp": 2, "dp": 2},
        {"model": "mixtral-8x7b", "batch": 16},
        {"model": "deepseek-v3", "phase": "prefill", "tp": 8, "weight_dtype": "fp8"},
    ],
)
def test_the_rows_add_up_to_the_totals(client, params):
    body = client.get("/check", params={**DECODE, **params, "breakdown": "true", "measured_ms": 9})
    body = body.json()
    rows = body["breakdown"]
    assert sum(row["flops"] for row in rows) == pytest.approx(body["flops"], rel=1e-9)
    assert sum(row["bytes"] for row in rows) == pytest.approx(body["bytes"], rel=1e-9)
    assert sum(row["time_s"] for row in rows) >= body["expected_time_s"] * (1 - 1e-12)
    if params.get("tp", 1) > 1:
        assert any(row["bound"] == "communication" for row in rows)


def test_get_and_post_agree(client):
    got = client.get("/expected-time", params={**DECODE, "breakdown": "true"}).json()
    workload = {"kind": "transformer", "model": "llama-8b", "seq_len": 1024}
    posted = client.post(
        "/expected-time", json={"chip": "h100", "breakdown": True, "workload": workload}
    ).json()
    assert posted["breakdown"] == got["breakdown"]


def test_generate_and_kernels_have_none(client):
    body = client.get(
        "/expected-time", params={**DECODE, "phase": "generate", "breakdown": "true"}
    ).json()
    assert body["breakdown"] is None
    assert any(warning.startswith("breakdown:") for warning in body["warnings"])
    kernel = {"kind": "matmul", "m": 64, "n": 64, "k": 64}
    body = client.post(
        "/expected-time", json={"chip": "h100", "breakdown": True, "workload": kernel}
    ).json()
    assert body["breakdown"] is None


def test_a_bad_flag_is_a_422(client):
    response = client.get("/expected-time", params={**DECODE, "breakdown": "maybe"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "breakdown"]
