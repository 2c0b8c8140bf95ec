"""/optimal-batch with a serving latency bound (issue 13): max_tpot_ms bounds a decode step's
realistic time, max_ttft_ms a prefill's; `limited_by` says which limit set the batch."""

import pytest

BASE = "/optimal-batch?chip=a100&model=llama-8b"


def _realistic_step_s(client, batch: int, phase: str = "decode") -> float:
    query = f"/expected-time?chip=a100&model=llama-8b&phase={phase}&batch={batch}"
    seconds: float = client.get(query).json()["realistic_time_s"]
    return seconds


def test_a_tight_time_per_output_token_limits_the_decode_batch(client):
    # Llama 3.1 8B decoding at 2,048 tokens on an A100: memory holds 227 sequences and no batch
    # is compute-bound (docs/formulas.md#optimal-batch). Each sequence adds its KV cache,
    # 268.57 MB, to the weights' 16.06 GB read per step: 0.132 ms per sequence at 2.039 TB/s
    # on top of 7.88 ms, and more in practice. So 20 ms per token allows a few dozen
    # sequences: the largest batch whose realistic step is within it, one more is not.
    answer = client.get(f"{BASE}&max_tpot_ms=20").json()
    assert answer["limited_by"] == "latency"
    assert answer["max_step_time_s"] == pytest.approx(0.02)
    best = answer["optimal_batch"]
    assert best == answer["latency_batch"]
    assert 10 < best < answer["max_batch"] == 227
    assert _realistic_step_s(client, best) <= 0.02 < _realistic_step_s(client, best + 1)
    row = next(r for r in answer["sweep"] if r["batch"] == best)  # named in the sweep
    assert row["realistic_time_s"] == pytest.approx(_realistic_step_s(client, best), rel=1e-12)
    assert "largest within the latency bound" in " ".join(answer["explanation"])


def test_a_loose_bound_leaves_memory_as_the_limit(client):
    bounded = client.get(f"{BASE}&max_tpot_ms=1000").json()
    free = client.get(BASE).json()
    assert (bounded["optimal_batch"], bounded["limited_by"]) == (227, "memory")
    assert bounded["latency_batch"] > 227
    assert free["latency_batch"] is None and free["max_step_time_s"] is None
    assert bounded["sweep"] != free["sweep"]  # the latency batch is named in the sweep


def test_a_bound_no_batch_meets_has_no_optimal_batch(client):
    # a step reads 16 GB of weights: 7.9 ms at the roofline, so 5 ms is out of reach
    answer = client.get(f"{BASE}&max_tpot_ms=5").json()
    assert (answer["optimal_batch"], answer["latency_batch"]) == (None, 0)
    assert answer["limited_by"] == "latency"
    assert "Not even batch 1 meets the latency bound" in " ".join(answer["explanation"])


def test_time_to_first_token_bounds_a_prefill(client):
    # prefill of 2,048 tokens is compute-bound from batch 1 (the ridge): any bound it meets
    # leaves the ridge the answer
    answer = client.get(f"{BASE}&phase=prefill&max_ttft_ms=1000").json()
    assert (answer["optimal_batch"], answer["limited_by"]) == (1, "ridge")
    latency = answer["latency_batch"]
    assert _realistic_step_s(client, latency, "prefill") <= 1.0
    assert _realistic_step_s(client, latency + 1, "prefill") > 1.0


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        (
            "max_ttft_ms=100",
            "max_ttft_ms",
            "bounds prefill batches; this workload's phase is decode",
        ),
        ("phase=prefill&max_tpot_ms=20", "max_tpot_ms", "bounds decode batches"),
        ("phase=training&max_tpot_ms=20", "max_tpot_ms", "bounds decode batches"),
        ("max_tpot_ms=0", "max_tpot_ms", "greater than or equal to 0.000001"),
    ],
)
def test_a_bound_that_does_not_apply_is_a_422_naming_it(client, query, field, message):
    response = client.get(f"{BASE}&{query}")
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["query", field]
    assert message in error["msg"]


def test_the_body_form_gives_the_same_answer(client):
    body = {"chip": "a100", "workload": {"kind": "transformer", "model": "llama-8b"}}
    posted = client.post("/optimal-batch", json={**body, "max_tpot_ms": 20})
    assert posted.status_code == 200
    assert posted.json() == client.get(f"{BASE}&max_tpot_ms=20").json()
    refused = client.post("/optimal-batch", json={**body, "max_ttft_ms": 20})
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["loc"] == ["body", "max_ttft_ms"]  # beside the workload
