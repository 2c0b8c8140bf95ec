"""Every error path: 404 with suggestions, 422 naming the field and range, never a 500."""

import math

import pytest

TRANSFORMER = {"chip": "a100", "model": "llama-8b"}
ENDPOINTS = ["/expected-time", "/memory-fit", "/optimal-batch", "/check"]


def _contains(loc, part):
    return any(tuple(loc[i : i + len(part)]) == part for i in range(len(loc)))


def assert_422(response, *loc_tail):
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, list) and detail
    for error in detail:
        assert set(error) <= {"loc", "msg", "type", "ctx"}
        assert error["msg"]
    if loc_tail:  # the field is named in the location (a union adds its member's name after)
        assert any(_contains(e["loc"], loc_tail) for e in detail), detail
    return detail


@pytest.mark.parametrize("path", ENDPOINTS)
def test_unknown_chip_and_model_are_404_with_suggestions(client, path):
    extra = {"measured_ms": 1} if path == "/check" else {}
    for params, kind in (
        ({**TRANSFORMER, "chip": "a1000"}, "chip"),
        ({**TRANSFORMER, "model": "llama-9b"}, "model"),
    ):
        response = client.get(path, params={**params, **extra})
        assert response.status_code == 404
        detail = response.json()["detail"]
        assert detail["message"].startswith(f"unknown {kind}")
        assert detail["suggestions"]


@pytest.mark.parametrize("path", ENDPOINTS)
def test_unknown_catalog_version_is_a_404(client, path):
    extra = {"measured_ms": 1} if path == "/check" else {}
    response = client.get(path, params={**TRANSFORMER, "catalog_version": "0.0", **extra})
    assert response.status_code == 404
    assert response.json()["detail"]["message"] == "unknown catalog version '0.0'"


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"batch": 0}, "batch", "greater than or equal to 1"),
        ({"batch": 10**10}, "batch", "less than or equal to 1000000000"),
        ({"seq_len": -5}, "seq_len", "greater than or equal to 1"),
        ({"tp": 0}, "tp", "greater than or equal to 1"),
        ({"tp": 64}, "tp", "must be <= the model's 32 attention heads"),
        ({"dtype": "fp7"}, "dtype", "Input should be"),
        ({"dtype": "fp8"}, "dtype", "no published fp8 matrix peak"),
        ({"phase": "serve"}, "phase", "Input should be"),
        ({"reserve_fraction": 1}, "reserve_fraction", "less than 1"),
        ({"batch": "many"}, "batch", "valid integer"),
        ({"bacth": 8}, "bacth", "Extra inputs are not permitted"),
    ],
)
def test_bad_query_values_name_the_field_and_range(client, params, field, words):
    detail = assert_422(
        client.get("/expected-time", params={**TRANSFORMER, **params}), "query", field
    )
    assert any(words in e["msg"] for e in detail), detail


def test_missing_chip_is_a_422(client):
    assert_422(client.get("/expected-time", params={"model": "llama-8b"}), "query", "chip")


def test_an_encoder_cannot_decode(client):
    detail = assert_422(
        client.get("/expected-time", params={"chip": "a100", "model": "bert-base"}),
        "query",
        "phase",
    )
    assert "encoder" in detail[0]["msg"]


def test_check_needs_exactly_one_measured_time(client):
    assert_422(client.get("/check", params=TRANSFORMER))
    assert_422(client.get("/check", params={**TRANSFORMER, "measured_ms": 1, "measured_time_s": 1}))
    assert_422(client.get("/check", params={**TRANSFORMER, "measured_ms": 0}), "measured_ms")
    assert_422(client.get("/check", params={**TRANSFORMER, "measured_ms": "inf"}), "measured_ms")
    assert_422(client.get("/check", params={**TRANSFORMER, "measured_ms": "nan"}), "measured_ms")


def post(client, path, body):
    return client.post(path, json=body)


@pytest.mark.parametrize(
    ("workload", "loc"),
    [
        ({"kind": "matmul", "m": 0, "n": 1, "k": 1}, ("m",)),
        ({"kind": "matmul", "m": 1, "n": 1}, ("k",)),
        ({"kind": "conv", "n": 1}, ("workload",)),
        ({"kind": "elementwise", "n": 10, "ops": ["cos", "frob"]}, ("ops",)),
        ({"kind": "elementwise", "n": 10, "ops": []}, ("ops",)),
        ({"kind": "custom", "flops": 1, "bytes": 0}, ("bytes",)),
        ({"kind": "custom", "flops": 0, "bytes": 5e-324}, ("bytes",)),  # once a 500: 0 s
        ({"kind": "custom", "flops": -1, "bytes": 1}, ("flops",)),
        (
            {"kind": "attention", "heads": 32, "kv_heads": 5, "q_len": 4, "head_dim": 8},
            ("kv_heads",),
        ),
        ({"kind": "transformer"}, ("transformer",)),
        ({"kind": "transformer", "model": "llama-8b", "config": {}}, ("transformer",)),
        ({"kind": "transformer", "config": {"model_type": "llama"}}, ("config", "hidden_size")),
        (
            {
                "kind": "transformer",
                "config": {
                    "hidden_size": 4096,
                    "num_hidden_layers": 2,
                    "num_attention_heads": 32,
                    "num_key_value_heads": 5,
                    "intermediate_size": 8,
                    "vocab_size": 8,
                },
            },
            ("config", "num_key_value_heads"),
        ),
        ({"kind": "transformer", "config": {"hidden_size": -1}}, ("config", "hidden_size")),
    ],
)
def test_bad_workloads_in_a_body_name_the_field(client, workload, loc):
    assert_422(post(client, "/expected-time", {"chip": "a100", "workload": workload}), *loc)


def test_memory_fit_and_optimal_batch_need_a_transformer(client):
    body = {"chip": "a100", "workload": {"kind": "matmul", "m": 8, "n": 8, "k": 8}}
    for path in ("/memory-fit", "/optimal-batch"):
        detail = assert_422(post(client, path, body), "workload", "kind")
        assert "needs a transformer workload" in detail[0]["msg"]


def test_nan_and_infinity_in_a_json_body_are_422_not_invalid_json(client):
    raw = '{"chip": "a100", "workload": {"kind": "custom", "flops": NaN, "bytes": Infinity}}'
    response = client.post(
        "/expected-time", content=raw, headers={"content-type": "application/json"}
    )
    detail = assert_422(response)
    assert {e["loc"][-1] for e in detail} == {"flops", "bytes"}


def test_malformed_json_is_a_422(client):
    response = client.post(
        "/expected-time", content="{not json", headers={"content-type": "application/json"}
    )
    assert_422(response)


def test_extreme_but_valid_sizes_give_finite_numbers(client):
    for params in (
        {"batch": 10**9, "seq_len": 10**8},
        {"phase": "prefill", "seq_len": 10**8},
        {"phase": "generate", "seq_len": 10**8, "gen_len": 10**8},
        {"phase": "training", "batch": 10**9, "seq_len": 10**8},
    ):
        response = client.get("/expected-time", params={**TRANSFORMER, **params})
        assert response.status_code == 200, response.text
        body = response.json()
        for key, value in body.items():
            if isinstance(value, float):
                assert math.isfinite(value), key
    huge = client.get("/optimal-batch", params={**TRANSFORMER, "seq_len": 10**8})
    assert huge.status_code == 200
    assert huge.json()["optimal_batch"] is None
