"""The limits a user plans against, through the app: /max-context (the longest context of a
decode step) agrees with /memory-fit and /expected-time at its boundary, and /memory-fit's
options list each weight and KV dtype the chip can use."""

import pytest

BASE = "/max-context?chip=a100&model=llama-8b"


def _fits(client, query):
    response = client.get(f"/memory-fit?chip=a100&model=llama-8b&{query}")
    assert response.status_code == 200, response.text
    return response.json()["fits"]


def test_at_the_longest_context_it_fits_and_one_token_more_it_does_not(client):
    # Llama 3.1 8B at batch 8 on an A100 80GB: 24.66 GB fixed (weights 16.06 GB, reserve
    # 8.59 GB, workspace 4.7 MB) and 1,048,576 B of KV cache per token of context (8 x 32
    # layers x 2 x 8 heads x 128 x 2 B) for the C + 1 tokens a step holds: 61.24 GB of room
    # is 58,407.4 tokens, so C = 58,406 (tests/engine/test_context.py derives it in full)
    answer = client.get(f"{BASE}&batch=8").json()
    assert (answer["max_context"], answer["limited_by"]) == (58_406, "memory")
    assert answer["memory_context"] == 58_406 and answer["latency_context"] is None
    assert answer["workload"]["seq_len"] == 58_406  # the step the times are of
    assert _fits(client, "batch=8&seq_len=58406")
    assert not _fits(client, "batch=8&seq_len=58407")
    at = client.get("/expected-time?chip=a100&model=llama-8b&batch=8&seq_len=58406").json()
    assert answer["realistic_time_s"] == at["realistic_time_s"]
    assert answer["required_bytes"] == at["memory_required_bytes"] <= answer["available_bytes"]
    assert answer["formatted"]["max_context"] == "58,406 tokens"


def test_a_latency_bound_limits_the_context(client):
    answer = client.get(f"{BASE}&batch=8&max_tpot_ms=20").json()
    assert answer["limited_by"] == "latency"
    assert answer["max_context"] == answer["latency_context"] < answer["memory_context"]
    assert answer["max_step_time_s"] == 0.02
    longest = answer["max_context"]
    step = "/expected-time?chip=a100&model=llama-8b&batch=8&seq_len="
    assert client.get(f"{step}{longest}").json()["realistic_time_s"] <= 0.02
    assert client.get(f"{step}{longest + 1}").json()["realistic_time_s"] > 0.02
    assert "one token more takes the step past 20 ms" in answer["explanation"][0]


def test_the_models_positions_limit_the_context(client):
    # batch 1: memory holds 467,286 tokens, but Llama 3.1 has 131,072 positions; the step's
    # own token takes the last, after 131,071 of context
    answer = client.get(BASE).json()
    assert (answer["max_context"], answer["limited_by"]) == (131_071, "model")
    assert answer["model_context"] == 131_071 < answer["memory_context"]
    assert answer["warnings"] == []  # no position beyond the model's
    assert _fits(client, "seq_len=131071")


def test_get_and_post_agree(client):
    get = client.get(f"{BASE}&batch=8&kv_dtype=fp8&max_tpot_ms=30").json()
    post = client.post(
        "/max-context",
        json={
            "chip": "a100",
            "workload": {"model": "llama-8b", "batch": 8, "kv_dtype": "fp8"},
            "max_tpot_ms": 30,
        },
    ).json()
    assert get == post


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("&seq_len=4096", "seq_len"),  # the context is the answer
        ("&phase=prefill", "phase"),
        ("&max_tpot_ms=0", "max_tpot_ms"),
        ("&batch=0", "batch"),
        ("&kv_dtype=fp7", "kv_dtype"),
        ("&max_ttft_ms=100", "max_ttft_ms"),  # not a parameter of /max-context
    ],
)
def test_bad_input_is_a_422_naming_the_field(client, query, field):
    response = client.get(BASE + query)
    assert response.status_code == 422, response.text
    assert [e["loc"][-1] for e in response.json()["detail"]] == [field]


def test_a_posted_seq_len_is_refused_in_the_body(client):
    response = client.post(
        "/max-context", json={"chip": "a100", "workload": {"model": "llama-8b", "seq_len": 9}}
    )
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][-1] == "seq_len"


def test_no_context_fits_is_zero_with_no_step(client):
    answer = client.get("/max-context?chip=a100&model=llama-70b").json()
    assert (answer["max_context"], answer["limited_by"]) == (0, "memory")
    assert answer["realistic_time_s"] is None and answer["required_bytes"] is None


def test_memory_fit_options_put_the_smallest_change_that_fits_first(client):
    # Llama 3.1 70B on one H100 (85.5 GB): 141 GB of bf16 weights do not fit; 70.6 GB of fp8
    # (or int8) weights, 8.55 GB of reserve and 0.67 GB of cache (2048 tokens x 80 layers x 2
    # x 8 heads x 128 x 2 B) do: 81.9 GB. One field changed, the widest first: fp8, then int8
    answer = client.get("/memory-fit?chip=h100&model=llama-70b&options=true").json()
    assert not answer["fits"]
    options = answer["options"]
    first = options[0]
    assert (first["weight_dtype"], first["kv_dtype"], first["changes"]) == (
        "fp8",
        "bf16",
        ["weight_dtype"],
    )
    assert first["fits"] and first["required_bytes"] == pytest.approx(81.88e9, rel=1e-3)
    assert options[1]["weight_dtype"] == "int8"
    assert "The smallest change that fits: weight_dtype fp8" in answer["explanation"][-1]
    fitting = [o["fits"] for o in options]
    assert fitting == sorted(fitting, reverse=True)  # those that fit first
    # the options agree with /memory-fit at each dtype pair
    for option in (options[0], options[-1]):
        query = f"weight_dtype={option['weight_dtype']}&kv_dtype={option['kv_dtype']}"
        fit = client.get(f"/memory-fit?chip=h100&model=llama-70b&{query}").json()
        assert (fit["required_bytes"], fit["fits"]) == (option["required_bytes"], option["fits"])
    pairs = {(o["weight_dtype"], o["kv_dtype"]) for o in options}
    assert len(pairs) == len(options) == 4 * 4  # bf16, fp8, int8, int4 for each


def test_options_offer_the_checkpoint_dtype_and_fp8_only_where_the_chip_has_it(client):
    # GPT-2 ships fp32 weights (models.json's checkpoint); an A100 has no fp8 matrix peak
    options = client.get("/memory-fit?chip=a100&model=gpt2&options=true").json()["options"]
    weights = {o["weight_dtype"] for o in options}
    assert weights == {"bf16", "fp32", "int8", "int4"}
    assert {o["kv_dtype"] for o in options} == {"bf16", "int8", "int4"}
    as_given = [o for o in options if not o["changes"]]
    assert options[0] == as_given[0]  # it fits as given: no change comes first


def test_without_options_there_are_none(client):
    assert client.get("/memory-fit?chip=a100&model=gpt2").json()["options"] is None


def test_training_has_no_dtype_options(client):
    response = client.get("/memory-fit?chip=a100&model=gpt2&phase=training&options=true")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "options"]
    body = {"chip": "a100", "workload": {"model": "gpt2", "phase": "training"}, "options": True}
    response = client.post("/memory-fit", json=body)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "options"]
